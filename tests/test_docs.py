"""The man pages render without groff warnings, and the README's two commands exist."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "man" / "slfs.1", ROOT / "man" / "slfs.5"]


def _groff() -> str:
    groff = shutil.which("groff")
    if groff is None:
        if os.environ.get("CI"):
            pytest.fail("groff is not installed (.ci/setup should have installed it)")
        pytest.skip("groff is not installed")
    return groff


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_man_page_renders_without_warnings(page: Path) -> None:
    groff = _groff()
    res = subprocess.run([groff, "-man", "-ww", "-Tutf8", "-z", str(page)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", f"groff warnings for {page.name}:\n{res.stderr}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_man_page_has_content(page: Path) -> None:
    groff = _groff()
    res = subprocess.run([groff, "-man", "-Tutf8", "-P", "-cbou", str(page)],
                         capture_output=True, text=True, timeout=60)
    text = res.stdout
    assert "NAME" in text and "slfs" in text
    assert len(text.splitlines()) > 50


def test_slfs1_documents_every_verb() -> None:
    source = PAGES[0].read_text()
    verbs = ["mount", "umount", "demo", "sim", "status", "diag", "run", "stop", "reset", "events", "top",
             "open", "close", "teleport", "focus", "save\\-back", "reset\\-all", "recompile", "exec",
             "commands", "open\\-uri", "mcp"]
    for verb in verbs:
        assert f".B {verb}" in source, f"slfs(1) does not document the {verb!r} verb"


def test_slfs5_documents_every_errno() -> None:
    source = PAGES[1].read_text()
    for name in ["ENOENT", "EACCES", "ETIMEDOUT", "EIO", "ESTALE", "EFBIG", "EINVAL", "ENAMETOOLONG",
                 "EXDEV", "EPERM", "EEXIST"]:
        assert f".B {name}\n" in source, f"slfs(5) has no ERRORS entry for {name}"


def test_readme_commands_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "bash .ci/setup && .venv/bin/slfs demo" in readme
    assert "bash .ci/run" in readme
    for script in ("setup", "run"):
        path = ROOT / ".ci" / script
        assert path.is_file()
        res = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


DOCS = [ROOT / "README.md", *PAGES, *sorted(p for p in (ROOT / "contrib").rglob("*") if p.is_file())]
MARKERS = ["intended interface", "being built", "is in progress", "not yet a promise"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_intended_interface_markers_remain(doc: Path) -> None:
    text = doc.read_text(errors="replace").lower()
    for marker in MARKERS:
        assert marker not in text, f"{doc.relative_to(ROOT)} still says {marker!r}"


def test_docs_name_every_mount_option_with_its_default() -> None:
    from slfs.model.options import Options

    readme = (ROOT / "README.md").read_text()
    page1 = PAGES[0].read_text()
    page5 = PAGES[1].read_text()
    defaults = Options()
    for name in ("prefetch", "attr_timeout", "delete_grace", "vm", "save_retries", "shutdown_grace", "open_cmd"):
        assert f"`{name}=" in readme, f"README does not document -o {name}"
        assert f"{name}=" in page1 and f"{name}=" in page5, f"a man page does not document -o {name}"
        value = getattr(defaults, name)
        if value is not None:
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            assert f"| {shown} |" in readme, f"README gives the wrong default for -o {name} (want {shown})"
    for flag in ("allow_remote_viewer",):  # options without a value, off by default
        assert getattr(defaults, flag) is False
        assert f"| `{flag}` | off |" in readme, f"README does not document -o {flag}"
        assert f".B {flag}\n" in page1 and f".B {flag}\n" in page5, f"a man page does not document -o {flag}"


def test_docs_state_the_naming_limits_of_the_code() -> None:
    from slfs.world import names, naming_rules

    page5 = PAGES[1].read_text()
    assert f"{naming_rules.NOTECARD_MAX:,}" in page5
    assert f"{naming_rules.SCRIPT_MAX:,}" in page5
    assert f"at most {names.MAX_SL_NAME_BYTES} bytes" in page5


def test_slfs5_documents_every_control_command() -> None:
    from slfs.control.server import ControlServer

    source = PAGES[1].read_text()
    section = source[source.index(".SH CONTROL SOCKET"):source.index(".SH FILE OPERATIONS")]
    server = ControlServer.__new__(ControlServer)
    ControlServer.__init__(server, _Stub(), None, None, None, None, "")  # type: ignore[arg-type]
    for command in [*server.commands, "subscribe", "unsubscribe", "shutdown", "ready"]:
        assert command in section, f"slfs(5) CONTROL SOCKET does not mention {command!r}"


class _Stub:
    tree = None


@pytest.mark.parametrize("shell,name", [("bash", "slfs.bash"), ("zsh", "_slfs"), ("fish", "slfs.fish")])
def test_contrib_completion_is_generated_from_the_parser(shell: str, name: str) -> None:
    """contrib/completion holds what `slfs completion SHELL` prints, never a hand-written script:
    regenerate with `slfs completion SHELL > contrib/completion/NAME` after changing the parser."""
    from slfs.cli import build_parser
    from slfs.cli.completion import script

    assert (ROOT / "contrib" / "completion" / name).read_text() == script(shell, build_parser()), (
        f"contrib/completion/{name} is stale: .venv/bin/slfs completion {shell} > contrib/completion/{name}")
