"""JSON text from outside (a peer, a client, a file), decoded without letting it take the process down.

json.loads refuses text nested deeper than the interpreter's recursion limit (about 1,000 levels,
less the caller's own stack) with RecursionError, and text too large for memory with MemoryError;
neither is a ValueError, so a reader that catches only what a syntax error raises dies of them
(one control-socket line `[[[[...]]]]` 100,000 deep took the daemon and its mount down). `loads`
turns both into `Refused`, a ValueError, so every reader treats them as the parse error they are.
"""

from __future__ import annotations

import json
from typing import Any


class Refused(ValueError):
    """Text json.loads could not decode for its depth or size (not its syntax)."""


def loads(text: str | bytes) -> Any:
    """json.loads(text); ValueError (a syntax error, or Refused) for text it cannot decode."""
    try:
        return json.loads(text)
    except RecursionError:
        raise Refused("nested too deeply") from None
    except MemoryError:
        raise Refused("too large to decode") from None
