"""`slfs VERB ...` run as a user runs it, against a test mount."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio

from .mount import Mount


async def slfs(m: Mount, *args: str | os.PathLike[str], check: bool = True, cwd: Any = None,
               env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "slfs", *[os.fspath(a) for a in args]]
    with trio.fail_after(timeout):
        res = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False, cwd=cwd,
                                     env={**m.env, **(env or {})})
    out, err = res.stdout.decode(), res.stderr.decode()
    if check:
        assert res.returncode == 0, f"slfs {args} exited {res.returncode}: {out!r} {err!r}"
    return res.returncode, out, err


async def sj(m: Mount, *args: str | os.PathLike[str], status: int = 0, **kw: Any) -> Any:
    """`slfs VERB --json ...`: stdout must be exactly one JSON document."""
    rc, out, err = await slfs(m, *args, "--json", check=False, **kw)
    assert rc == status, f"slfs {args} --json exited {rc} (wanted {status}): {out!r} {err!r}"
    return json.loads(out)
