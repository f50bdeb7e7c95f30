"""Mounts whose simulated viewer runs `slfs edit "%s"` as its external editor (live sync, end to end)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from slfs.sim.world import world_from_json

from .cli import slfs
from .mount import Mount, MountFactory
from .worlds import FULL, item, u

OBJ = u(1, "b")
INV = u(7)  # a script in the agent's inventory
IN_OBJ = u(2)
GOOD = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("good");\n    }\n}\n'
BAD = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("bad" @);\n    }\n}\n'


def live_world() -> Any:
    return world_from_json({
        "agent_id": u(99, "e"), "agent_name": "Tester Resident",
        "agent_inventory": [item(INV, "Pocket Script", "script", GOOD, subtype=0, vm="mono", running=True)],
        "objects": [{"object_id": OBJ, "object_name": "Box", "permissions": FULL,
                     "inventory": [item(IN_OBJ, "Boxed", "script", GOOD, subtype=0, vm="mono", running=True)]}],
    })


async def live_mount(mount_factory: MountFactory, tmp_path: Path, *options: str,
                     sim_kwargs: dict[str, Any] | None = None) -> tuple[Mount, Path]:
    """A mount whose simulated viewer runs `slfs edit "%s"` (through a wrapper that gives it the
    test mount's environment, as the user's session would), and whose editor records its argv."""
    m = await mount_factory(live_world(), options=list(options), sim_kwargs=sim_kwargs)
    argv_log = tmp_path / "editor-argv"
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {shlex.quote(str(argv_log))}\n")
    editor.chmod(0o755)
    wrapper = tmp_path / "viewer-runs-slfs-edit"
    env = {k: m.env[k] for k in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME")}
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    wrapper.write_text(f"#!/bin/sh\n{exports}export VISUAL={shlex.quote(str(editor))}\n"
                       f"exec {shlex.quote(sys.executable)} -m slfs edit \"$@\" >> "
                       f"{shlex.quote(str(tmp_path / 'edit.out'))} 2>&1\n")
    wrapper.chmod(0o755)
    assert m.sim is not None
    m.sim.external_editor = f'{wrapper} "%s"'
    await m.thread(os.listdir, m.mnt)
    return m, argv_log


async def open_in_viewer(m: Mount, item_id: str, argv_log: Path) -> tuple[str, Path]:
    """The user presses Edit in the viewer; returns (script_id, the live file) once the user's
    editor was started on it."""
    assert m.sim is not None
    sid, _temp = await m.sim.open_script_editor(item_id)
    await m.wait_for(lambda: has_text(argv_log), 20, "slfs edit starting the editor")
    await m.sim.live_seen(sid, 1)  # its first poll: the file it wrote itself (ignored)
    live = Path(argv_log.read_text().splitlines()[-1])
    assert live.parent == m.path(".slfs", "live")
    return sid, live


async def live_round_trip(m: Mount, live: Path) -> None:
    """A failed compile and its fix through a live file: `slfs diag --wait` gives the rows, then none."""
    assert await m.thread(live.read_text) == GOOD
    await write(m, live, BAD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 1 and out.startswith(f"{live}:5:"), out
    await write(m, live, GOOD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 0 and out == "", out
    assert os.path.exists(live)


async def has_text(path: Path) -> bool:
    return path.exists() and bool(path.read_text().strip())


async def write(m: Mount, path: Path, text: str) -> None:
    await m.thread(path.write_text, text)
