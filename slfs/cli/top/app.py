"""`slfs top`: the live view, a Textual app over the model (model.py) fed by feed.py's threads.

Events are taken from the feed's queue every DRAIN seconds, in batches; an event changes the cells
of the rows it names (DataTable.update_cell), and only a change in the rows' set (something
published, created, deleted, or a filter) rebuilds the table, so 2,000 objects stay responsive."""

from __future__ import annotations

import gc
import os
import queue
import subprocess
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, RichLog, Static

from ...client import MountClient
from ..edit import editor_argv
from ..human import COLOURS, AnEvent, event_colour, event_line
from ..output import VerbError
from .feed import Feed
from .frame import COLUMNS, compile_colour, cut, state_colour, widths
from .model import Row, TopModel

DRAIN = 0.05  # how often the feed's queue is read: an event is on screen well within 0.5 s
BATCH = 5000  # at most this many messages per read, so a flood never freezes the keys
COLUMN_KEYS = ("name", "state", "compile", "at", "output")
EVENT_PANE_LINES = 1000
FILTER_PAUSE = 0.15  # the filter is applied once the typing pauses this long (or on enter)
STYLE = {name: name for name in COLOURS}


def styled(text: str, colour: str | None) -> Text:
    return Text(text, style=STYLE.get(colour or "", ""), no_wrap=True, end="")


def row_cells(row: Row, w: tuple[int, ...]) -> list[Text]:
    cells = row.cells()
    colours = ["bold" if row.kind != "script" else None, state_colour(row), compile_colour(row), "dim",
               "red" if row.output_error else None]
    return [styled(cut(text, w[i]), colours[i]) for i, text in enumerate(cells)]


class Diagnostics(ModalScreen[None]):
    """`d`: the diagnostics of the selected script (or of what the selected folder holds)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,d,q", "dismiss", "close")]
    DEFAULT_CSS = """
    Diagnostics { align: center middle; }
    Diagnostics > VerticalScroll { width: 90%; height: 80%; border: round $accent; background: $surface; }
    """

    def __init__(self, title: str, lines: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(Text("\n".join(self.lines) or "no diagnostics"))
            yield Static(Text("escape: close", style="dim"))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


class TopApp(App[int]):
    TITLE = "slfs top"
    CSS = """
    #header { height: 2; background: $boost; }
    #message { height: 1; color: $warning; }
    #tree { height: 1fr; }
    #filter { display: none; }
    #events { height: 10; border-top: solid $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "state('run')", "run"),
        Binding("s", "state('stop')", "stop"),
        Binding("x", "state('reset')", "reset"),
        Binding("e", "edit", "edit"),
        Binding("d", "diagnostics", "diagnostics"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("q", "quit_top", "quit"),
        Binding("j", "move(1)", "down", show=False),
        Binding("k", "move(-1)", "up", show=False),
    ]

    def __init__(self, client: MountClient, model: TopModel) -> None:
        super().__init__()
        self.client = client
        self.model = model
        self.feed = Feed(client, model.cursor)
        self.needle = ""
        self.shown: list[str] = []  # the rows in the table, in order
        self.widths: tuple[int, ...] = ()
        self._filtering: Timer | None = None  # the filter's rebuild, waiting for the typing to pause

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        yield Static(id="message")
        yield DataTable(id="tree", cursor_type="row", zebra_stripes=False)
        yield Input(placeholder="filter: part of a path (enter: keep, escape: clear)", id="filter")
        yield RichLog(id="events", max_lines=EVENT_PANE_LINES, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.rebuild()
        pane = self.query_one("#events", RichLog)
        for e in list(self.model.events)[-EVENT_PANE_LINES:]:
            pane.write(self.event_text(e))
        self.show_header()
        self.query_one("#tree", DataTable).focus()
        # What the first frame built (thousands of rows and cells) lives as long as the view: out
        # of the collector's full passes, which would otherwise stall the view now and then.
        gc.freeze()
        self.feed.start()
        self.set_interval(DRAIN, self.drain)

    def table(self) -> DataTable[Any]:
        return self.query_one("#tree", DataTable)

    def rebuild(self, *, to_match: bool = False) -> None:
        """The table anew from the model and the filter, the cursor kept on its row (`to_match`:
        put on the first script the filter matches, else its first row that matches, rather than
        on an object above it)."""
        table = self.table()
        keep = self.selected()
        if to_match and self.needle:
            low = self.needle.casefold()
            hits = [rel for rel in self.model.visible(self.needle) if low in rel.casefold()]
            scripts = [rel for rel in hits if self.model.rows[rel].kind == "script"]
            keep = (scripts or hits)[0] if hits else keep
        self.shown = self.model.visible(self.needle)
        self.widths = widths(self.model, self.shown, max(80, self.size.width - 2))
        table.clear(columns=True)
        for key, title, width in zip(COLUMN_KEYS, COLUMNS, self.widths, strict=True):
            table.add_column(title, width=width, key=key)
        for rel in self.shown:
            table.add_row(*row_cells(self.model.rows[rel], self.widths), key=rel)
        if keep in self.shown:
            table.move_cursor(row=self.shown.index(keep), animate=False)

    def on_resize(self, event: Any) -> None:
        if self.shown or self.model.order:
            self.rebuild()
        self.show_header()

    def update_rows(self, keys: set[str]) -> None:
        table = self.table()
        shown = set(self.shown)
        for rel in keys & shown:
            for key, cell in zip(COLUMN_KEYS, row_cells(self.model.rows[rel], self.widths), strict=True):
                table.update_cell(rel, key, cell)

    def show_header(self) -> None:
        first, counts = self.model.header()
        width = max(20, self.size.width)  # one line each, cut as --once cuts them
        header = Text(cut(first, width), style="bold") + Text("\n" + cut(counts, width))
        self.query_one("#header", Static).update(header)

    def note(self, text: str) -> None:
        self.query_one("#message", Static).update(Text(cut(" ".join(text.split()), max(20, self.size.width))))

    def event_text(self, e: AnEvent) -> Text:
        return Text(event_line(e), style=STYLE.get(event_colour(e) or "", ""), no_wrap=True, end="")

    # --- the feed --------------------------------------------------------------------------

    def drain(self) -> None:
        changed: set[str] = set()
        rebuild = header = False
        pane = self.query_one("#events", RichLog)
        for _ in range(BATCH):
            try:
                kind, data = self.feed.out.get_nowait()
            except queue.Empty:
                break
            if kind == "event":
                change = self.model.apply(data)
                if change.resync:
                    self.feed.resync()
                changed |= change.rows
                header = header or change.status or bool(change.rows)
                if change.fresh:
                    pane.write(self.event_text(data))
            elif kind == "listing":
                rebuild = self.model.load(data) or rebuild
                changed |= self.model.changed
                header = True
            elif kind == "status":
                header = header or data != self.model.status
                self.model.set_status(data)
            elif kind == "state":  # a run, stop or reset answered
                row = self.model.rows.get(self.model.rel(str(data.get("path", ""))))
                if row is not None and data.get("state"):
                    self.model.set_state(row, str(data["state"]))
                    changed.add(row.key)
                    header = True
                self.note(f"{data.get('word')}: {self.model.rel(str(data.get('path', '')))}: {data.get('state')}")
            elif kind == "diag":
                self.push_screen(Diagnostics(*data))
            elif kind == "restarted":
                self.model.restarted()  # a new daemon's events count from 1 again
            elif kind in ("note", "lost"):
                self.note(str(data) if kind == "note" else f"event stream lost ({data}); retrying")
        if rebuild:
            self.rebuild()
        elif changed:
            self.update_rows(changed)
        if header or rebuild:
            self.show_header()

    # --- keys ------------------------------------------------------------------------------

    def selected(self) -> str | None:
        table = self.table()
        if not self.shown or table.cursor_row is None or not 0 <= table.cursor_row < len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def selected_script(self) -> Row | None:
        rel = self.selected()
        row = self.model.rows.get(rel) if rel else None
        if row is None or row.kind != "script":
            self.note("select a script first")
            return None
        return row

    def abspath(self, rel: str) -> str:
        return os.path.join(self.client.mountpoint, rel)

    def action_move(self, step: int) -> None:
        table = self.table()
        table.move_cursor(row=max(0, table.cursor_row + step))

    def action_state(self, word: str) -> None:
        row = self.selected_script()
        if row is None:
            return
        path = self.abspath(row.key)
        self.note(f"{word}: {row.key} ...")

        def go() -> tuple[str, Any]:
            done = self.client.set_state(word, [path])
            if done.failures:
                return "note", f"{word} {row.key}: {done.failures[0].reason}"
            return "state", {**done.results[0], "word": word}

        self.feed.run(go)

    def action_diagnostics(self) -> None:
        rel = self.selected()
        if rel is None:
            return
        path = self.abspath(rel)

        def go() -> tuple[str, Any]:
            result = self.client.diag(path)
            # Paths in the mount, as the rows name them (the daemon's are absolute).
            lines = [f"{self.model.rel(str(d['path']))}:{d['row']}:{d['column']}: {d['level']}: {d['message']}"
                     for d in result.data.get("diagnostics", [])]
            notes = [n.removeprefix(self.client.mountpoint.rstrip("/") + "/") for n in result.notes]
            return "diag", (f"diagnostics: {rel}", lines + [f"note: {n}" for n in notes])

        self.feed.run(go)

    def action_edit(self) -> None:
        row = self.selected_script()
        if row is None:
            return
        try:
            argv, _source = editor_argv(self.abspath(row.key), None)
        except VerbError as exc:
            self.note(str(exc))
            return
        try:
            with self.suspend():
                status = subprocess.run(argv, check=False).returncode
        except (OSError, SuspendNotSupported) as exc:  # no such editor, or a terminal that cannot suspend
            self.note(f"could not start the editor {argv[0]}: {exc}")
            return
        self.refresh()
        self.note(f"edited {row.key}" + (f" (the editor exited with status {status})" if status else ""))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # at once: the keys typed next are the filter's

    def on_input_changed(self, event: Input.Changed) -> None:
        # A rebuild costs ~0.1 s per 2,000 objects: one when the typing pauses, not one a key.
        if self._filtering is not None:
            self._filtering.stop()
        self._filtering = self.set_timer(FILTER_PAUSE, lambda: self.filter_now(event.value))

    def filter_now(self, value: str) -> None:
        if self._filtering is not None:
            self._filtering.stop()
            self._filtering = None
        if value.strip() != self.needle:
            self.needle = value.strip()
            self.rebuild(to_match=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.filter_now(event.value)  # what was typed last, before the keys go to the table
        # At once (focus() would wait a turn): the next key is the table's, not the filter's.
        self.set_focus(self.table())
        if not event.value.strip():
            event.input.display = False
        self.note(f"filter: {self.needle} (/ changes it)" if self.needle else "no filter")

    def on_key(self, event: Any) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            self.filter_now("")
            box.display = False
            self.set_focus(self.table())
            self.note("no filter")
            event.stop()

    def action_quit_top(self) -> None:
        self.feed.stop()
        self.exit(0)


def run_app(client: MountClient, model: TopModel) -> int:
    """Run the view until `q`; its exit status (Textual's 1 after an error it reported)."""
    app = TopApp(client, model)
    try:
        app.run()
    finally:
        app.feed.stop()
    return int(app.return_code or 0)
