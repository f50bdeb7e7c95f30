"""Session layer: the WebSocket JSON-RPC session with the viewer (slfs is the client)."""

from .call_errors import CallTimeout, MessageTooLarge, NotConnected
from .challenge import ChallengeError, read_challenge
from .connection import METHOD_TIMEOUTS, timeout_for
from .listener import NullListener, SessionInfo, SessionListener
from .session import CONNECTED, CONNECTING, DISCONNECTED, ViewerSession

__all__ = [
    "CONNECTED", "CONNECTING", "DISCONNECTED", "METHOD_TIMEOUTS", "CallTimeout", "ChallengeError", "MessageTooLarge",
    "NotConnected", "NullListener", "SessionInfo", "SessionListener", "ViewerSession", "read_challenge",
    "timeout_for",
]
