"""The one exception of the client layer: a user message and, where there is one, the errno name
(`code`) the daemon answered with or that stands for what went wrong locally."""

from __future__ import annotations


class ClientError(Exception):
    """A failed command (the daemon's `error` and errno name `code`), a broken connection, or a
    mount that cannot be found or started."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message

    @property
    def connection_lost(self) -> bool:
        """The daemon went away: no use asking it about the next file."""
        return self.code in ("ECONNRESET", "ESHUTDOWN")


class ShutDown(ClientError):
    """The daemon said {"type":"shutdown"} or closed the connection."""


class NoMount(ClientError):
    """No running mount is the one asked for (ENOENT), or several are and none was named (EINVAL)."""
