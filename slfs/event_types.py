"""The types of the events a mount reports (`.slfs/events`, `slfs events`, the control socket's
event stream, MCP), spelled once: the model emits them by these names and every reader (the
event log, the control socket's clients, `slfs top`, the human output, MCP) tells them apart by
them. Members are strings, so events stay plain JSON; slfs(5), EVENTS, says what each carries."""

from __future__ import annotations

import enum


class Event(enum.StrEnum):
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    PUBLISH = "publish"
    UNPUBLISH = "unpublish"
    CREATE = "create"
    DELETE = "delete"
    COMPILE = "compile"
    SCRIPT_COMPILED = "script.compiled"
    SCRIPT_STATE = "script.state"
    SCRIPT_STATE_REQUESTED = "script.state_requested"
    RUNTIME_DEBUG = "runtime.debug"
    RUNTIME_ERROR = "runtime.error"
    SYNTAX_CHANGE = "syntax.change"
    REFUSED = "refused"
    ERROR = "error"
    RECOVERY = "recovery"
    RESEND = "resend"
    VERSION = "version"
    LIVE_SAVE = "live.save"
    LIVE_SUBSCRIBE = "live.subscribe"
    LIVE_UNSUBSCRIBE = "live.unsubscribe"
    VIEWER_OPEN_FILE = "viewer.open_file"
    VIEWER_MESSAGE = "viewer.message"
    VIEWER_COMMAND = "viewer.command"


# A script's runtime output, as the viewer reports it.
RUNTIME = (Event.RUNTIME_DEBUG, Event.RUNTIME_ERROR)
