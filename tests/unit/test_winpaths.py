"""slfs.winpaths: the viewer's Windows paths as local ones (a fake Wine prefix and a fake WSL mount
in tmp_path), every refusal, and the detection of the mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slfs import winpaths
from slfs.winpaths import MAX_PATH_BYTES, PathMapper, PathTranslator, WindowsPathError, detect

TEMP = r"C:\users\Resident\AppData\Local\Temp"


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    """A Wine prefix: dosdevices/c: -> ../drive_c (relative), z: -> / (absolute), d: -> an absolute
    directory elsewhere; the temp dir of user Resident holds a file."""
    root = tmp_path / "wine"
    (root / "dosdevices").mkdir(parents=True)
    temp = root / "drive_c" / "users" / "Resident" / "AppData" / "Local" / "Temp"
    temp.mkdir(parents=True)
    (temp / "sl_script_x_0123456789abcdef0123456789abcdef.lsl").write_text("default {}")
    os.symlink("../drive_c", root / "dosdevices" / "c:")
    os.symlink("/", root / "dosdevices" / "z:")
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.symlink(str(other), root / "dosdevices" / "d:")
    return root


def wine(prefix: Path) -> PathMapper:
    return PathMapper(mode="wine", wine_prefix=str(prefix))


def test_posix_paths_pass_through_in_every_mode(prefix: Path, tmp_path: Path) -> None:
    for mapper in (PathMapper(), wine(prefix), PathMapper(mode="wsl", windows_mount=str(tmp_path))):
        assert mapper.to_local("/tmp/sl_script_a.lsl") == "/tmp/sl_script_a.lsl"
        assert mapper.to_local("/a/../b") == "/a/../b"  # unchanged, as a native viewer's


def test_wine_drive_c_through_its_relative_dosdevices_link(prefix: Path) -> None:
    name = "sl_script_x_0123456789abcdef0123456789abcdef.lsl"
    expected = str(prefix / "drive_c/users/Resident/AppData/Local/Temp" / name)
    assert wine(prefix).to_local(TEMP + "\\" + name) == expected
    assert wine(prefix).to_local("C:/users/Resident/AppData/Local/Temp/" + name) == expected  # slashes
    assert wine(prefix).to_local("c:\\users\\Resident\\AppData/Local\\\\Temp\\.\\" + name) == expected  # mixed


def test_wine_drive_z_is_the_root_and_an_absolute_link_is_taken_as_is(prefix: Path, tmp_path: Path) -> None:
    assert wine(prefix).to_local(r"Z:\etc\hostname") == "/etc/hostname"
    assert wine(prefix).to_local("Z:\\") == "/"
    assert wine(prefix).to_local(r"D:\notes.txt") == str(tmp_path / "elsewhere" / "notes.txt")


def test_wine_case_insensitive_components(prefix: Path) -> None:
    name = "sl_script_x_0123456789abcdef0123456789abcdef.lsl"
    got = wine(prefix).to_local("C:\\USERS\\resident\\appdata\\LOCAL\\temp\\" + name.upper())
    assert got == str(prefix / "drive_c/users/Resident/AppData/Local/Temp" / name)


def test_a_missing_component_is_kept_as_given(prefix: Path) -> None:
    got = wine(prefix).to_local(r"C:\users\Resident\NoSuch\Dir\File.txt")
    assert got == str(prefix / "drive_c/users/Resident/NoSuch/Dir/File.txt")


def test_the_exact_case_wins_over_another_and_several_matches_are_ordered(prefix: Path) -> None:
    temp = prefix / "drive_c/users/Resident/AppData/Local/Temp"
    (temp / "Dup").mkdir()
    (temp / "dUP").mkdir()
    (temp / "dup").mkdir()
    base = str(temp)
    assert wine(prefix).to_local(TEMP + r"\dup") == base + "/dup"
    assert wine(prefix).to_local(TEMP + r"\DUP") == base + "/Dup"  # "Dup" < "dUP" < "dup"


def test_the_case_insensitive_scan_is_bounded(prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = prefix / "drive_c/users/Resident/AppData/Local/Temp"
    for i in range(5):
        (temp / f"a{i}").touch()
    (temp / "zz-Target").touch()
    monkeypatch.setattr(winpaths, "MAX_SCAN", 3)
    got = wine(prefix).to_local(TEMP + r"\ZZ-TARGET")
    assert got in (str(temp / "ZZ-TARGET"), str(temp / "zz-Target"))  # found only if within the bound
    monkeypatch.setattr(winpaths, "MAX_SCAN", 0)
    assert wine(prefix).to_local(TEMP + r"\ZZ-TARGET") == str(temp / "ZZ-TARGET")


def test_wsl_drive_letters_under_the_windows_mount(tmp_path: Path) -> None:
    (tmp_path / "c" / "Users" / "Resident").mkdir(parents=True)
    wsl = PathMapper(mode="wsl", windows_mount=str(tmp_path))
    assert wsl.to_local(r"C:\Users\Resident\x.tmp") == str(tmp_path / "c/Users/Resident/x.tmp")
    assert wsl.to_local(r"c:/users/RESIDENT/x.tmp") == str(tmp_path / "c/Users/Resident/x.tmp")
    with pytest.raises(WindowsPathError, match=r"drive D: is not mounted at .*windows_mount=DIR"):
        wsl.to_local(r"D:\x")


@pytest.mark.parametrize(("path", "why"), [
    (TEMP + r"\..\..\secret", "'..' component"),
    (r"C:\..", "'..' component"),
    ("C:/users/../x", "'..' component"),
    (r"\\.\pipe\x", "device path"),
    (r"\\?\C:\x", "device path"),
    ("//?/C:/x", "device path"),
    (r"\\server\share\x", "UNC"),
    ("//server/share/x", "UNC"),
    ("C:foo", "drive-relative"),
    ("C:", None),  # the drive's root: allowed
    (TEMP + "\\a\x01b", "control character"),
    (TEMP + "\\a\nb", "control character"),
    (TEMP + "\\x.txt:stream", "alternate data stream"),
    ("relative/path", "not an absolute path"),
    ("", "no path"),
])
def test_refusals(prefix: Path, path: str, why: str | None) -> None:
    mapper = wine(prefix)
    if why is None:
        assert mapper.to_local(path) == str(prefix / "drive_c")
        return
    with pytest.raises(WindowsPathError, match=why):
        mapper.to_local(path)


@pytest.mark.parametrize("mode", ["native", "wine", "wsl"])
def test_nul_surrogates_and_overlong_are_refused_in_every_mode(prefix: Path, tmp_path: Path, mode: str) -> None:
    mapper = PathMapper(mode=mode, wine_prefix=str(prefix), windows_mount=str(tmp_path))
    for path in ("/tmp/a\0b", "C:\\a\0b"):
        with pytest.raises(WindowsPathError, match="NUL"):
            mapper.to_local(path)
    with pytest.raises(WindowsPathError, match="Unicode"):
        mapper.to_local("C:\\a\ud800")
    for path in ("/" + "a" * MAX_PATH_BYTES, "C:\\" + "a" * MAX_PATH_BYTES):
        with pytest.raises(WindowsPathError, match="longer than a path can be"):
            mapper.to_local(path)


def test_a_result_that_grows_past_the_bound_is_refused(prefix: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 200)
    deep.mkdir()
    os.symlink(str(deep), prefix / "dosdevices" / "e:")
    path = "E:\\" + "\\".join(["x" * 200] * 20)  # under the bound as given, over it once mapped
    assert len(path) < MAX_PATH_BYTES
    with pytest.raises(WindowsPathError, match="local path is longer"):
        wine(prefix).to_local(path)


def test_a_drive_without_a_dosdevices_link_names_the_option(prefix: Path) -> None:
    with pytest.raises(WindowsPathError, match=r"drive Q: has no link in .*dosdevices.*-o wine_prefix=DIR"):
        wine(prefix).to_local(r"Q:\x")


def test_not_a_wine_prefix_says_so(tmp_path: Path) -> None:
    mapper = PathMapper(mode="wine", wine_prefix=str(tmp_path / "nowine"))
    with pytest.raises(WindowsPathError, match=r"is not a Wine prefix.*-o wine_prefix=DIR"):
        mapper.to_local(TEMP)


def test_a_result_that_is_not_absolute_is_refused(prefix: Path) -> None:
    # A prefix given relative (parse_options makes it absolute; a mapper built by hand may not be):
    # its links resolve to relative paths, which are refused.
    rel = PathMapper(mode="wine", wine_prefix=os.path.relpath(prefix))
    with pytest.raises(WindowsPathError, match="not an absolute path"):
        rel.to_local(TEMP)
    with pytest.raises(WindowsPathError, match="not absolute"):
        PathMapper(mode="wsl", windows_mount="mnt").to_local(TEMP)


def test_native_mode_refuses_windows_paths_naming_the_option() -> None:
    with pytest.raises(WindowsPathError, match=r"windows_paths=wine .*windows_paths=wsl"):
        PathMapper().to_local(TEMP + r"\x.tmp")


def test_messages_show_network_paths_safely(prefix: Path) -> None:
    with pytest.raises(WindowsPathError) as info:
        wine(prefix).to_local(TEMP + "\\\x1b[31mred")
    assert "\x1b" not in str(info.value)  # shown with repr
    assert "-o windows_paths=wine" in str(info.value)


def test_helpers() -> None:
    assert winpaths.is_windows_path(r"C:\x") and winpaths.is_windows_path("c:/x") and winpaths.is_windows_path("C:x")
    assert winpaths.is_windows_path(r"\\server\s") and not winpaths.is_windows_path("/tmp/x")
    assert not winpaths.is_windows_path("sl_script_a.lsl")
    assert winpaths.basename(r"C:\Temp\sl_script_a_b.lsl") == "sl_script_a_b.lsl"
    assert winpaths.basename("C:/Temp/x.lsl") == "x.lsl"
    assert winpaths.basename("/tmp/a\\b") == "a\\b"  # a backslash is a name character on POSIX
    with pytest.raises(ValueError):
        PathMapper(mode="auto")


def test_detection(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "sys/fs/binfmt_misc").mkdir(parents=True)
    env = {"HOME": "/home/u"}
    assert detect("auto", environ=env, proc=str(proc)) == PathMapper(
        mode="wine", wine_prefix="/home/u/.wine", windows_mount="/mnt", auto=True)
    assert detect("auto", environ={**env, "WINEPREFIX": "/opt/sl"}, proc=str(proc)).wine_prefix == "/opt/sl"
    assert detect("auto", environ={**env, "WINEPREFIX": "rel"}, proc=str(proc)).wine_prefix == "/home/u/.wine"
    assert detect("auto", environ={**env, "WSL_DISTRO_NAME": "Ubuntu"}, proc=str(proc)).mode == "wsl"
    (proc / "sys/fs/binfmt_misc/WSLInterop").touch()
    wsl = detect("auto", environ=env, proc=str(proc))
    assert (wsl.mode, wsl.windows_mount, wsl.auto) == ("wsl", "/mnt", True)
    # An explicit prefix means Wine (Wine runs in WSL2 too); an explicit mount means WSL2.
    assert detect("auto", "/p", environ=env, proc=str(proc)).mode == "wine"
    assert detect("auto", None, "/win", environ={}, proc=str(tmp_path / "none")).mode == "wsl"
    assert detect("off", environ=env, proc=str(proc)).mode == "native"
    assert detect("wine", environ=env, proc=str(proc)) == PathMapper(mode="wine", wine_prefix="/home/u/.wine")
    assert detect("wsl", None, "/w", environ=env, proc=str(proc)) == PathMapper(
        mode="wsl", wine_prefix="/home/u/.wine", windows_mount="/w")
    with pytest.raises(ValueError):
        detect("linux")


def test_status_lines() -> None:
    assert PathMapper().describe() == "native"
    assert PathMapper(mode="wine", wine_prefix="/home/u/.wine").describe() == "wine (prefix /home/u/.wine)"
    assert PathMapper(mode="wsl", windows_mount="/mnt").describe() == "wsl (/mnt)"
    assert PathMapper(mode="wsl", windows_mount="/mnt", auto=True).describe() == "wsl (/mnt, detected)"
    auto = PathTranslator(PathMapper(mode="wine", wine_prefix="/home/u/.wine", auto=True))
    assert auto.status() == "native (auto: a Windows path would go through the Wine prefix /home/u/.wine)"
    auto.to_local("/tmp/x")
    assert auto.status().startswith("native")
    with pytest.raises(WindowsPathError):
        auto.to_local(r"C:\x")  # no such prefix: refused, but a Windows path came
    assert auto.status() == "wine (prefix /home/u/.wine, detected)"


# --- the mount options ---------------------------------------------------------------------------


def test_mount_options(prefix: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from slfs.model.options import parse_options

    o = parse_options([])
    assert (o.windows_paths, o.wine_prefix, o.windows_mount) == ("auto", None, None)
    for choice in ("auto", "wine", "wsl", "off"):
        assert parse_options([f"windows_paths={choice}"]).windows_paths == choice
    o = parse_options([f"windows_paths=wine,wine_prefix={prefix}/"])
    assert o.wine_prefix == str(prefix)  # normalized
    assert parse_options([f"windows_mount={tmp_path}"]).windows_mount == str(tmp_path)
    # Taken where `slfs mount` runs: ~ and relative directories mean what they mean there.
    monkeypatch.chdir(tmp_path)
    assert parse_options(["wine_prefix=wine"]).wine_prefix == str(prefix)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_options(["wine_prefix=~/wine"]).wine_prefix == str(prefix)


@pytest.mark.parametrize(("opts", "why"), [
    (["windows_paths=linux"], "must be one of auto, wine, wsl, off"),
    (["windows_paths="], "must be one of"),
    (["windows_paths"], "must be one of"),
    (["wine_prefix"], "needs a directory"),
    (["wine_prefix="], "needs a directory"),
    (["windows_mount="], "needs a directory"),
    (["wine_prefix=/nonexistent/prefix"], "is not a directory"),
    (["windows_mount=/nonexistent/mnt"], "is not a directory"),
    (["wine_prefix={tmp}"], "is not a Wine prefix"),
    (["windows_paths=wsl,wine_prefix={prefix}"], "needs windows_paths=wine"),
    (["windows_paths=off", "wine_prefix={prefix}"], "needs windows_paths=wine"),
    (["windows_paths=wine,windows_mount={tmp}"], "needs windows_paths=wsl"),
    (["wine_prefix={prefix},windows_mount={tmp}"], "exclude each other"),
])
def test_bad_mount_options(prefix: Path, tmp_path: Path, opts: list[str], why: str) -> None:
    from slfs.model.options import parse_options

    with pytest.raises(ValueError, match=why):
        parse_options([o.format(prefix=prefix, tmp=tmp_path) for o in opts])


def test_a_bad_windows_option_is_a_usage_error_before_anything_mounts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from slfs import cli

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    assert cli.main(["mount", "-f", "-o", "windows_paths=dos", str(mnt)]) == 2
    assert "-o windows_paths must be one of auto, wine, wsl, off" in capsys.readouterr().err
    assert cli.main(["mount", "-o", f"wine_prefix={tmp_path}", str(mnt)]) == 2
    assert "is not a Wine prefix" in capsys.readouterr().err
    assert not (tmp_path / "slfs").exists()  # nothing was started


def test_the_workspace_maps_with_the_mount_options(prefix: Path) -> None:
    from slfs.model.options import parse_options
    from slfs.model.workspace import Workspace

    ws = Workspace("127.0.0.1", 9020, parse_options([f"windows_paths=wine,wine_prefix={prefix}"]))
    assert ws.session.paths is ws.paths  # one translator: the challenge's and live sync's
    assert ws.paths.mapper == PathMapper(mode="wine", wine_prefix=str(prefix), windows_mount="/mnt")
    assert ws.status()["windows_paths"] == f"wine (prefix {prefix})"
    assert list(ws.status())[:4] == ["state", "state_detail", "endpoint", "windows_paths"]
    off = Workspace("127.0.0.1", 9020, parse_options(["windows_paths=off"]))
    assert off.status()["windows_paths"] == "native"
