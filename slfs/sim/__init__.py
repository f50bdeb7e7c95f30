"""A simulated Second Life viewer serving the external-editor JSON-RPC protocol, for tests and demos."""

from .server import SimViewer
from .sync_points import SyncError
from .world import Item, Prim, SimObject, World, load_world, sample_world

__all__ = ["Item", "Prim", "SimObject", "SimViewer", "SyncError", "World", "load_world", "sample_world"]
