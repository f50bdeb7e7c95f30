"""`slfs top --once`: one frame as text (the header, the tree of objects, prims and scripts, the
last events, the keys), `width` columns wide, coloured only when asked (a terminal without
NO_COLOR). The live view shows the same cells (app.py); the words and widths are decided here."""

from __future__ import annotations

from ..human import STATE_COLOUR, paint
from .model import Row, TopModel

COLUMNS = ("NAME", "STATE", "COMPILE", "AT", "LAST OUTPUT")
STATE_WIDTH = 7  # running, stopped, faulted
AT_WIDTH = 8
NAME_MAX = 40
COMPILE_MAX = 40
EVENT_LINES = 10
KEYS = "keys: up/down move  r run  s stop  x reset  e edit  d diagnostics  / filter  q quit"


def cut(text: str, width: int) -> str:
    """`text` in at most `width` columns, an ellipsis marking what was cut."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def widths(model: TopModel, keys: list[str], width: int) -> tuple[int, int, int, int, int]:
    """The columns' widths for these rows in `width` columns: the names as wide as they need (up to
    NAME_MAX), the compile column COMPILE_MAX (less on a narrow screen: the live view updates it in
    place, so it cannot follow its text), the last output the rest."""
    name = min(NAME_MAX, max([len(COLUMNS[0]), *(len(model.rows[k].cells()[0]) for k in keys)]))
    free = max(0, width - name - STATE_WIDTH - AT_WIDTH - 4 * 2)
    comp = min(COMPILE_MAX, max(len(COLUMNS[2]), free // 2))
    return name, STATE_WIDTH, comp, AT_WIDTH, max(0, free - comp)


def state_colour(row: Row) -> str | None:
    return STATE_COLOUR.get(row.state)


def compile_colour(row: Row) -> str | None:
    return None if row.compiled is None else ("green" if row.compiled else "red")


def row_line(row: Row, w: tuple[int, ...], colour: bool) -> str:
    cells = row.cells()
    styles = ["bold" if row.kind != "script" else None, state_colour(row), compile_colour(row), "dim",
              "red" if row.output_error else None]
    parts = []
    for i, (text, style) in enumerate(zip(cells, styles, strict=True)):
        shown = cut(text, w[i])
        pad = "" if i == len(cells) - 1 else " " * (w[i] - len(shown))
        parts.append(paint(shown, style, colour) + pad)
    return "  ".join(parts).rstrip()


def render(model: TopModel, width: int = 160, colour: bool = False, needle: str = "",
           events: int = EVENT_LINES) -> str:
    """The whole frame: every row (no scrolling in a frame printed once) and the last `events`."""
    keys = model.visible(needle)
    w = widths(model, keys, width)
    out = [paint(cut(line, width), "bold" if i == 0 else None, colour) for i, line in enumerate(model.header())]
    out.append("")
    heading = "  ".join(c.ljust(w[i]) if i < len(COLUMNS) - 1 else c for i, c in enumerate(COLUMNS))
    out.append(paint(cut(heading, width), "dim", colour))
    out.extend(row_line(model.rows[k], w, colour) for k in keys)
    if not keys:
        out.append("no object is published" if not needle else f"nothing matches {needle!r}")
    out.append("")
    out.append(paint("events", "dim", colour))
    lines = model.event_lines(events, colour)
    # A coloured line is not cut: its codes would count as columns (the terminal cuts it instead).
    out.extend(lines if colour else [cut(line, width) for line in lines])
    if not lines:
        out.append("none")
    out.append("")
    out.append(paint(cut(KEYS, width), "dim", colour))
    return "\n".join(out) + "\n"
