"""The expansions stop themselves at their limits, for any input (issue 21, item 5).

The expansion runs in a worker thread of the daemon that nothing can stop from outside, so a
pathological source must stop by itself, soon and in little memory, with `LimitExceeded` (the
save's EFBIG) naming the limit. The LSL cases run in a child process with its address space
limited and a generous timeout: without the limits they would take the machine's memory or run
for hours, and the child's end is the test's failure instead.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slfs.sources import INWORLD_LIMIT, AgentMacros, LimitExceeded, PreprocessError, Source, firestorm, lines_of, luau
from slfs.sources.lsl import expand_lsl

ROOT = Path(__file__).resolve().parents[2]
MEMORY = 1536 * 2**20  # the child's address space
TIMEOUT = 90  # seconds: generous; a stop comes after a few seconds of pcpp's work at most

# Expands one LSL source in a child process: includes from a dict of files, the result as JSON
# with the child's own peak resident memory (VmHWM).
CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
from slfs.sources import AgentMacros, Source
from slfs.sources.lsl import expand_lsl

job = json.load(sys.stdin)

class Resolver:
    def find(self, name, including, angle):
        text = job["files"].get(name)
        return None if text is None else Source("/src/" + name, text, shown=name)

    def searched(self, name, including, angle):
        return ["/src"]

try:
    e = expand_lsl(job["source"], "/src/main.lsl", Resolver(), macros=AgentMacros(),
                   lazy_lists=job["lazy"], switch=job["lazy"])
    out = {"error": None, "size": len(e.text)}
except BaseException as exc:
    out = {"error": type(exc).__name__, "message": str(exc)[:500], "limit": getattr(exc, "limit", None)}
# VmHWM is this process image's own peak: ru_maxrss would carry the forking parent's (pytest's)
# peak across the exec.
with open("/proc/self/status") as status:
    out["peak_mb"] = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps(out))
""".replace("MEMORY", str(MEMORY))


def expand_in_child(source: str, files: dict[str, str] | None = None, *, lazy: bool = False) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps({"source": source, "files": files or {},
                          "lazy": lazy}), capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def stopped(result: dict[str, Any], limit: str | None = None) -> str:
    """The message of a LimitExceeded (of `limit` when given); the child stayed small."""
    assert result["error"] == "LimitExceeded", result
    if limit is not None:
        assert result["limit"] == limit, result
    assert "limit" in result["message"]
    assert result["peak_mb"] < 400, result
    return str(result["message"])


def chain(levels: int, leaf: str = "x") -> str:
    """`#define M0 M1 M1`, `#define M1 M2 M2`, ...: 2**levels tokens."""
    names = [f"M{i}" for i in range(levels)] + [leaf]
    return "".join(f"#define {a} {b} {b}\n" for a, b in itertools.pairwise(names))


# --- LSL: macros ---------------------------------------------------------------------------------


def test_an_exponential_macro_stops_in_bounded_memory() -> None:
    message = stopped(expand_in_child(chain(40) + "default { state_entry() { M0; } }\n"))
    assert "main.lsl" in message  # where it was hit


def test_an_exponential_macro_that_expands_to_nothing_stops_on_work() -> None:
    # Little output (white space only), much work: only the work limit sees it.
    stopped(expand_in_child(chain(40, leaf="E") + "#define E\nM0\n"), "work")


def test_an_exponential_macro_inside_an_if_stops() -> None:
    stopped(expand_in_child(chain(40, leaf="1") + "#if M0\n#endif\n"))


def test_recursive_macros_are_blocked_by_the_c_rules() -> None:
    source = "#define A A B\n#define B A\nA;\n#define F(x) F(x) G(x)\n#define G(x) F(x)\nF(1);\n"
    result = expand_in_child(source)
    assert result["error"] is None and result["size"] < 100, result


def test_macro_calls_nested_deep_stop_at_the_nesting_limit() -> None:
    source = "#define F(a) a\n" + "F(" * 3000 + "1" + ")" * 3000 + ";\n"
    stopped(expand_in_child(source))


def test_a_line_storm_stops_at_the_in_world_size() -> None:
    source = "#define L __LINE__ __LINE__ __LINE__ __LINE__\n" + "L L L L L L L L L L\n" * 20000
    message = stopped(expand_in_child(source))
    assert str(INWORLD_LIMIT) in message or "work" in message


def test_a_huge_shift_in_an_if_is_an_error_not_a_gigabyte() -> None:
    result = expand_in_child("#if (1 << 8000000000) > 0\n#endif\n")
    assert result["error"] == "PreprocessError" and "shift count" in result["message"], result
    assert result["peak_mb"] < 400


def test_a_deeply_parenthesised_if_is_fine() -> None:
    result = expand_in_child("#if " + "(" * 20000 + "1" + ")" * 20000 + "\nx;\n#endif\n")
    assert result["error"] is None, result


# --- LSL: includes -------------------------------------------------------------------------------


def test_an_exponential_include_tree_stops_on_work() -> None:
    files = {f"f{i}.lsl": f'#include "f{i + 1}.lsl"\n#include "f{i + 1}.lsl"\n' for i in range(30)}
    files["f30.lsl"] = "y;\n"
    stopped(expand_in_child('#include "f0.lsl"\n', files), "work")


def test_includes_nested_too_deep_stop_at_the_include_depth() -> None:
    files = {f"f{i}.lsl": f'#include "f{i + 1}.lsl"\n' for i in range(300)}
    files["f300.lsl"] = "y;\n"
    stopped(expand_in_child('#include "f0.lsl"\n', files), "include depth")


def test_include_loops_are_cycles() -> None:
    for files in ({"a.lsl": '#include "a.lsl"\n'}, {"a.lsl": '#include "b.lsl"\n', "b.lsl": '#include "a.lsl"\n'}):
        result = expand_in_child('#include "a.lsl"\n', files)
        assert result["error"] == "PreprocessError" and "include cycle" in result["message"], result


def test_an_oversize_include_stops() -> None:
    class Big:
        def find(self, name: str, including: str, angle: bool) -> Source:
            return Source("/src/big.lsl", "x;\n", shown="big.lsl", oversize=True)

        def searched(self, name: str, including: str, angle: bool) -> list[str]:
            return []

    with pytest.raises(LimitExceeded) as info:
        expand_lsl('#include "big.lsl"\n', "/src/main.lsl", Big(), macros=AgentMacros(), lazy_lists=False, switch=False)
    assert info.value.limit == "include size" and info.value.row == 1


# --- Firestorm's steps ---------------------------------------------------------------------------


def test_casts_nested_thousands_deep_stop_on_work() -> None:
    text = "x = (integer)a[" * 3000 + "0" + "]" * 3000 + ";\n"
    with pytest.raises(LimitExceeded) as info:
        firestorm.lazy_lists(lines_of(text, "/src/main.lsl"))
    assert info.value.limit == "work" and "limit" in info.value.message


def test_unclosed_lists_stop_on_work() -> None:
    with pytest.raises(LimitExceeded):
        firestorm.lazy_lists(lines_of("a[" * 30000 + "\n", "/src/main.lsl"))


def test_switches_nested_deep_stop_at_the_switch_depth() -> None:
    text = "switch (x) { case 1: " * 2000 + "break; }" * 2000 + "\n"
    with pytest.raises(LimitExceeded) as info:
        firestorm.switches(lines_of(text, "/src/main.lsl"))
    assert info.value.limit == "switch depth"


# --- Luau requires -------------------------------------------------------------------------------


class Modules:
    """Luau modules by name, next to each other."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find(self, name: str, including: str, angle: bool) -> Source | None:
        text = self.files.get(name)
        return None if text is None else Source("/src/" + name, text, shown=name)

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        return ["/src"]


def luau_stops(files: dict[str, str], main: str = 'local m = require("m0")\n') -> LimitExceeded:
    with pytest.raises(LimitExceeded) as info:
        luau.expand_luau(main, "/src/main.luau", Modules(files))
    assert "limit" in info.value.message
    return info.value


def test_a_require_chain_too_deep_stops() -> None:
    files = {f"m{i}.luau": f'return require("m{i + 1}")\n' for i in range(500)}
    files["m500.luau"] = "return 1\n"
    assert luau_stops(files).limit == "require depth"


def test_too_many_modules_stop() -> None:
    files = {f"m{i}.luau": "return 1\n" for i in range(1000)}
    main = "".join(f'local m{i} = require("m{i}")\n' for i in range(1000))
    assert luau_stops(files, main).limit == "modules"


def test_a_bundle_over_the_in_world_size_stops_when_the_module_joins() -> None:
    files = {f"m{i}.luau": f'local x = require("m{i + 1}")\nreturn "' + "y" * 60_000 + '"\n' for i in range(10)}
    files["m10.luau"] = "return 1\n"
    err = luau_stops(files)
    assert err.limit == "in-world size" and str(INWORLD_LIMIT) in err.message
    assert err.path.startswith("/src/m")  # the require that took it over


def test_require_cycles_are_still_errors() -> None:
    files = {"m0.luau": 'return require("m1")\n', "m1.luau": 'return require("m0")\n'}
    with pytest.raises(PreprocessError) as info:
        luau.expand_luau('local m = require("m0")\n', "/src/main.luau", Modules(files))
    assert "require cycle" in info.value.message
