"""What every verb prints with: JSON documents, `slfs: ` messages on standard error, the terminal-safe
stream, and VerbError, a verb's own refusal (its message and exit status)."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ..protocol.text import printable


class VerbError(Exception):
    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# Whether this run printed a JSON document already: a failure after it (`events -f`) adds none.
_emitted = False


def begin_run() -> None:
    """A new run of a verb (main() runs many in one process in the tests): nothing printed yet."""
    global _emitted
    _emitted = False


def emit_json(data: Any) -> None:
    global _emitted
    _emitted = True
    sys.stdout.write(json.dumps(data, default=str) + "\n")
    sys.stdout.flush()


def emit_json_error(message: str, code: str | None, status: int) -> None:
    """A `--json` verb that fails still prints one JSON object: the control socket's shape of a
    failure ("error" the message, "code" the errno name or null) and the exit status."""
    if not _emitted:
        emit_json({"error": message, "code": code, "exit": status})


def err(message: str) -> None:
    """`slfs: MESSAGE` on standard error, each prefix said once ("stop X: stop X: why" never)."""
    from .human import said_once

    print(f"slfs: {said_once(message)}", file=sys.stderr, flush=True)


class PrintableStream:
    """What a verb prints for people (paths, names, diagnostics, runtime lines: network text) goes
    through `printable`, so no escape sequence reaches the terminal; `--json` output is escaped
    already (json.dumps escapes every control and non-ASCII character)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
