"""slfs: a FUSE file system over the Second Life viewer's external-editor protocol."""

__version__ = "1.0"
