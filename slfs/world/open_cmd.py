"""`-o open_cmd`: the editor's argument-vector template, checked when the option is parsed.

Kept apart from local/launch.py (which runs it) so that parsing options, which every CLI verb does,
imports neither trio nor the protocol types.
"""

from __future__ import annotations

import re
import shlex

TEMPLATE = re.compile(r"\{path\}|\{line\}")


def check_template(open_cmd: str) -> list[str]:
    """The words of `-o open_cmd`, or ValueError saying what is wrong. `{path}` may be a whole word
    or begin one (`{path}:{line}`): the word then begins with `/`, never an option; inside a word
    (`-c 'e {path}'`, `+{path}`) the file name would be read by the editor as a command."""
    words = shlex.split(open_cmd)  # never through a shell: the path is one argument
    if not words or not words[0]:
        raise ValueError("no program to run")
    if TEMPLATE.search(words[0]):
        raise ValueError("the program (the first word) cannot be {path} or {line}")
    for word in words[1:]:
        if "{path}" in word and (not word.startswith("{path}") or word.count("{path}") > 1):
            raise ValueError(f"{word!r}: {{path}} must be a whole word or begin one (e.g. {{path}} or "
                             "{path}:{line}), so the file name is never read as an option or a command")
    return words
