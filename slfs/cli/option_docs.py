"""The option lists of README.md and man/slfs.1, rendered from the one table
(model/option_table.py). `python -m slfs.cli.option_docs` writes them between their markers;
tests/unit/test_option_docs.py fails when a file differs from what the table renders."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..model.option_table import OPTION_TABLE, OptionDoc

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "generated from slfs/model/option_table.py by python -m slfs.cli.option_docs"
README_MARKS = (f"<!-- mount options: {SOURCE} -->\n", "<!-- end of mount options -->\n")
MAN_MARKS = (f'.\\" mount options: {SOURCE}\n', '.\\" end of mount options\n')


def _rows() -> list[tuple[list[str], OptionDoc]]:
    """Options in table order; neighbours that share one entry (the kernel's flags) share a row."""
    rows: list[tuple[list[str], OptionDoc]] = []
    for name, opt in OPTION_TABLE.items():
        if rows and rows[-1][1] is opt:
            rows[-1][0].append(name)
        else:
            rows.append(([name], opt))
    return rows


def markdown() -> str:
    def code(text: str) -> str:
        return "`" + text.replace("|", "\\|") + "`"

    lines = ["| Option | Default | Meaning |", "| --- | --- | --- |"]
    for names, opt in _rows():
        left = ", ".join(code(n if opt.form is None else f"{n}={opt.form}") for n in names)
        lines.append(f"| {left} | {opt.default} | {opt.doc.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def _roff_text(text: str) -> str:
    """Markdown-ish text (`code` spans) as roff: code in bold, hyphens and backslashes escaped."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"`([^`]*)`", lambda m: f"\\fB{m.group(1)}\\fR", text)


def roff() -> str:
    out = []
    for names, opt in _rows():
        out.append(".TP")
        if opt.form is None:
            out.append(".B " + ", ".join(_roff_text(n) for n in names))
        else:
            out.append(f'.BI "{_roff_text(names[0])}=" "{_roff_text(opt.form)}"')
        doc = _roff_text(opt.doc)
        out.append(doc[:1].upper() + doc[1:] + ".")
        if opt.default not in ("", "none", "off"):
            out.append(f"Default {_roff_text(opt.default)}.")
    return "\n".join(out) + "\n"


def _splice(text: str, marks: tuple[str, str], block: str) -> str:
    begin, end = marks
    head, rest = text.split(begin, 1)
    _old, tail = rest.split(end, 1)
    return head + begin + block + end + tail


def block_of(text: str, marks: tuple[str, str]) -> str:
    """What a file holds between its markers."""
    begin, end = marks
    return text.split(begin, 1)[1].split(end, 1)[0]


FILES = {"README.md": (README_MARKS, markdown), "man/slfs.1": (MAN_MARKS, roff)}


def main() -> int:
    for rel, (marks, render) in FILES.items():
        path = ROOT / rel
        text = path.read_text()
        new = _splice(text, marks, render())
        if new != text:
            path.write_text(new)
            print(f"wrote {rel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
