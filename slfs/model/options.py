"""Mount options (`-o name=value,...`), parsed and validated in one place (the test suite's hooks,
which are not options, are slfs/debug_hooks.py's)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import attrs

from ..winpaths import CHOICES as WINDOWS_PATHS_CHOICES
from ..world.open_cmd import check_template
from .option_table import PASSTHROUGH, VM_CHOICES

if TYPE_CHECKING:
    import cattrs


@attrs.frozen(kw_only=True)
class Options:
    prefetch: int = 16  # concurrent content fetches started by a prim's first listing; 0 disables
    delete_grace: float = 3.0  # seconds an rm waits for a re-create before deleting in-world
    vm: str = "mono"  # vm of new .lsl scripts
    open_cmd: str | None = None  # argv template run on editor.open_file (never through a shell)
    attr_timeout: float = 60.0  # kernel attribute/entry cache for names and sizes slfs knows
    save_retries: int = 4  # retries of a transient viewer error ("Item not found", region down)
    shutdown_grace: float = 20.0  # how long SIGTERM waits for pending saves
    reconnect_wait: float = 5.0  # how long after a drop a call waits for the session to come back
    allow_remote_viewer: bool = False  # --host other than loopback (the viewer is then not vetted)
    nonempty: bool = False  # mount over a directory that holds files (hiding them), as sshfs's -o nonempty
    fuse: tuple[str, ...] = ()  # options passed through to the kernel (allow_other, ...)
    # The preprocessor: Firestorm's lazy lists and switch statements (on by default, as there), and
    # the include directories searched after the including file's folder (None: the default,
    # $XDG_DATA_HOME/slfs/include when it exists).
    lazy_lists: bool = True
    switch: bool = True
    include: tuple[str, ...] | None = None
    # Windows paths the viewer names (a viewer under Wine, slfs in WSL2; slfs/winpaths.py): auto,
    # wine, wsl or off; the Wine prefix (None: $WINEPREFIX, else ~/.wine) and WSL's Windows mount
    # (None: /mnt), both absolute once parsed.
    windows_paths: str = "auto"
    wine_prefix: str | None = None
    windows_mount: str | None = None
    # URIs from a browser (`slfs open-uri`): the ports besides the default viewer port a URI may
    # make slfs mount for, and how long a daemon waits for its first connection before it unmounts
    # and exits (0: it retries for ever, as a mount the user started does; open-uri passes one).
    uri_ports: tuple[int, ...] = ()
    connect_wait: float = 0.0
    # The history store (model/history.py): its bound in bytes (0 disables the store) and the age
    # in days past which versions go (0: no age bound); never the newest two of an item.
    history_max: int = 256 << 20
    history_days: float = 365.0


_FLOAT = {"delete_grace", "attr_timeout", "shutdown_grace", "reconnect_wait", "connect_wait", "history_days"}
_INT = {"prefetch", "save_retries"}
# Upper bounds: prefetch starts that many fetch tasks at mount (a huge number froze the daemon),
# and every duration must be a real number of seconds the kernel and trio can take.
_MAX = {"prefetch": 256, "save_retries": 100, **dict.fromkeys(_FLOAT, 1_000_000)}
_PASSTHROUGH = frozenset(PASSTHROUGH)

# What `-o` gave an option: its text after `=`, or None for a bare `-o name`.
Raw = str | None


def parse_options(items: list[str]) -> Options:
    """Parse `-o` values (each may be a comma-separated list). Raises ValueError with the reason.

    The values are split into {name: text} here, then structured into Options by cattrs, each field
    by its rule below (its type, range or choices, and the words of its error)."""
    raw: dict[str, Raw] = {}
    fuse: list[str] = []
    for group in items:
        name = ""
        for opt in filter(None, (o.strip() for o in group.split(","))):
            if name == "uri_ports" and opt.isdigit():  # -o uri_ports=9020,9021: the list goes on
                raw["uri_ports"] = f"{raw['uri_ports']}:{opt}"
                continue
            name, sep, value = opt.partition("=")
            if name in _PASSTHROUGH:
                # libfuse knows these as flags only: `ro=1` would reach fuse_session_new and fail
                # the mount there ("unknown option(s)"), so it is a usage error here.
                if sep:
                    raise ValueError(f"-o {name} takes no value (it is passed to the kernel as -o {name}), "
                                     f"got {opt!r}")
                fuse.append(name)
            elif name in _RULES:
                raw[name] = value if sep else None
            else:
                raise ValueError(f"unknown mount option {name!r}")
    _check_windows_paths(raw)
    return _options_converter().structure({**raw, "fuse": tuple(fuse)}, Options)


def _number(name: str, value: Raw) -> int | float:
    kind: type[int] | type[float] = int if name in _INT else float
    try:
        number = kind(value or "")
    except ValueError:
        raise ValueError(f"-o {name} needs {'an integer' if kind is int else 'a number'}, "
                         f"got {value or ''!r}") from None
    if number < 0:
        raise ValueError(f"-o {name} must not be negative")
    if not math.isfinite(number) or number > _MAX[name]:
        raise ValueError(f"-o {name} must be at most {_MAX[name]:,}, got {value!r}")
    return number


def _choice(choices: tuple[str, ...]) -> Callable[[str, Raw], str]:
    def rule(name: str, value: Raw) -> str:
        if value not in choices:
            got = "" if name == "vm" else f", got {value or ''!r}"
            raise ValueError(f"-o {name} must be one of {', '.join(choices)}{got}")
        return value
    return rule


def _open_cmd(name: str, value: Raw) -> str:
    if value is None or not value.strip():
        raise ValueError("-o open_cmd needs a command, e.g. open_cmd='code -g {path}:{line}'")
    try:
        check_template(value)  # as local/launch.py splits it to run it (never through a shell)
    except ValueError as exc:
        raise ValueError(f"-o open_cmd={value!r}: {exc}") from None
    return value


def _flag(name: str, value: Raw) -> bool:
    if value is not None:
        raise ValueError(f"-o {name} takes no value")
    return True


def _zero_one(name: str, value: Raw) -> bool:
    if value not in ("0", "1"):
        raise ValueError(f"-o {name} takes 0 or 1, got {value or ''!r}")
    return value == "1"


def _include(name: str, value: Raw) -> tuple[str, ...]:
    # Parsed where `slfs mount` runs, so `~` and relative directories mean what they mean to the
    # user typing them.
    return tuple(os.path.abspath(os.path.expanduser(d)) for d in (value or "").split(":") if d)


def _ports(name: str, value: Raw) -> tuple[int, ...]:
    """The ports of uri_ports=9020:9021 (`:`, since a comma ends the -o option), each a port a viewer may listen on."""
    ports = []
    for text in filter(None, (p.strip() for p in (value or "").split(":"))):
        if not text.isdigit() or not 1024 <= int(text) <= 65535:
            raise ValueError(f"-o uri_ports: {text!r} is not a port from 1024 to 65535")
        ports.append(int(text))
    if not ports:
        raise ValueError("-o uri_ports needs ports, e.g. uri_ports=9020:9021")
    return tuple(ports)


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
MAX_HISTORY = 1 << 40


def parse_size(name: str, value: Raw) -> int:
    """A size in bytes: 1048576, 512k, 256M, 2G (binary units; KiB, MiB and GiB are the same)."""
    text = (value or "").strip().lower().removesuffix("ib").removesuffix("b")
    unit = text[-1:] if text[-1:] in _SIZE_UNITS and text[-1:] else ""
    number = text[:-1] if unit else text
    try:
        size = float(number)
    except ValueError:
        raise ValueError(f"-o {name} needs a size such as 256M, 1G or 0, got {value or ''!r}") from None
    if not math.isfinite(size) or size < 0:
        raise ValueError(f"-o {name} must be a size of at least 0, got {value!r}")
    size = int(size * _SIZE_UNITS[unit])
    if size > MAX_HISTORY:
        raise ValueError(f"-o {name} must be at most 1T, got {value!r}")
    return size


def _directory(name: str, value: Raw) -> str:
    """A directory option, taken where `slfs mount` runs (`~` and relative paths mean what they mean
    to the user typing them); it must exist: wine_prefix must be a Wine prefix (hold dosdevices/)."""
    if value is None or not value.strip():
        example = "~/.wine" if name == "wine_prefix" else "/mnt"
        raise ValueError(f"-o {name} needs a directory, e.g. {name}={example}")
    path = os.path.normpath(os.path.abspath(os.path.expanduser(value)))
    if not os.path.isdir(path):
        raise ValueError(f"-o {name}={value}: {path} is not a directory")
    if name == "wine_prefix" and not os.path.isdir(os.path.join(path, "dosdevices")):
        raise ValueError(f"-o wine_prefix={value}: {path} is not a Wine prefix (it has no dosdevices directory)")
    return path


def _check_windows_paths(kw: dict[str, Raw]) -> None:
    """wine_prefix goes with windows_paths=wine (or auto, which it makes Wine), windows_mount with
    wsl (or auto, which it makes WSL); never both, nor either with windows_paths=off."""
    mode = kw.get("windows_paths") or "auto"
    if "wine_prefix" in kw and "windows_mount" in kw:
        raise ValueError("-o wine_prefix and -o windows_mount exclude each other (a Wine prefix is for a viewer "
                         "under Wine, a Windows mount for slfs in WSL2)")
    if "wine_prefix" in kw and mode not in ("auto", "wine"):
        raise ValueError(f"-o wine_prefix needs windows_paths=wine (or auto), not windows_paths={mode}")
    if "windows_mount" in kw and mode not in ("auto", "wsl"):
        raise ValueError(f"-o windows_mount needs windows_paths=wsl (or auto), not windows_paths={mode}")


# Each option's rule, by field name: what cattrs structures that field's `-o` text with.
_RULES: dict[str, Callable[[str, Raw], object]] = {
    **dict.fromkeys(_INT | _FLOAT, _number),
    "vm": _choice(VM_CHOICES),
    "open_cmd": _open_cmd,
    "allow_remote_viewer": _flag,
    "nonempty": _flag,
    "lazy_lists": _zero_one,
    "switch": _zero_one,
    "include": _include,
    "windows_paths": _choice(WINDOWS_PATHS_CHOICES),
    "wine_prefix": _directory,
    "windows_mount": _directory,
    "uri_ports": _ports,
    "history_max": parse_size,
}


@cache
def _options_converter() -> cattrs.Converter:
    # No detailed validation: the first rule that refuses raises its own ValueError, which is what
    # `slfs mount` prints. Built at first use: `slfs --help` and the other verbs need no cattrs.
    import cattrs
    from cattrs.gen import make_dict_structure_fn, override

    conv = cattrs.Converter(detailed_validation=False)

    def hook(name: str, rule: Callable[[str, Raw], object]) -> Any:
        return override(struct_hook=lambda value, _type: rule(name, value))

    fields = {f.name for f in attrs.fields(Options)}
    assert set(_RULES) == fields - {"fuse"}, "every mount option has a rule"
    conv.register_structure_hook(Options, make_dict_structure_fn(
        Options, conv, _cattrs_forbid_extra_keys=True, **{name: hook(name, rule) for name, rule in _RULES.items()}))
    return conv
