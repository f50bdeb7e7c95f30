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
    verbs = ["mount", "umount", "demo", "sim", "status", "diag", "run", "stop", "reset", "events",
             "open", "close", "teleport", "focus", "save\\-back", "reset\\-all", "recompile", "exec",
             "commands", "open\\-uri"]
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
