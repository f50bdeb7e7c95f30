"""The client side of a mount's control socket, shared by the `slfs` verbs and the MCP server:
finding the mount (mounts), the connection (connection), one method per operation with
structured results (operations.MountClient), and one exception type (errors.ClientError).

It prints nothing and never exits; the callers decide how results and errors are shown.
"""

from .client_error import ClientError, NoMount, ShutDown
from .operations import MountClient

__all__ = ["ClientError", "MountClient", "NoMount", "ShutDown"]
