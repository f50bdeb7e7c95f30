"""`slfs open-uri URI`: the viewer's launch URI (vscode://lindenlab.sl-vscode-plugin/connect?...),
which a browser hands over from any web page: it mounts only for the default viewer port or one
the user listed, then opens the object or script it names (live-synced when the viewer's own
editor has it open)."""

from __future__ import annotations

import argparse
import re
import urllib.parse
from typing import Any

from ..client import ClientError, MountClient, mounts
from ..client.temp_files import live_ids
from .edit import echo, edit_log, run_editor
from .output import VerbError, emit_json, err

URI_PREFIX = "vscode://lindenlab.sl-vscode-plugin/connect"
# The options `slfs open-uri -o` takes (the rest are the mount's own: `slfs mount -o`).
OPEN_URI_OPTIONS = ("uri_ports", "connect_wait")


def parse_uri(uri: str) -> dict[str, Any]:
    """vscode://lindenlab.sl-vscode-plugin/connect?port=P&object=UUID&script=UUID, percent-decoded
    first (some viewers encode the delimiters) -> {"port", "object", "script"}."""
    text = uri.strip()
    for _ in range(3):  # doubly encoded URIs exist too
        decoded = urllib.parse.unquote(text)
        if decoded == text:
            break
        text = decoded
    if not text.lower().startswith(URI_PREFIX):
        raise VerbError(f"{uri}: not a viewer launch URI ({URI_PREFIX}?port=...&object=...)", 2)
    query = text[len(URI_PREFIX):].lstrip("/").lstrip("?")
    fields: dict[str, str] = {}
    for part in re.split(r"[&;]", query):
        key, _, value = part.partition("=")
        if key:
            fields[key.strip().lower()] = value.strip()
    port_text = fields.get("port", "")
    # ASCII digits only: str.isdigit() also takes superscripts, which int() then refuses.
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 1024 <= int(port_text) <= 65535:
        raise VerbError(f"{uri}: the port must be a number from 1024 to 65535 (got {port_text or 'none'!r})", 2)
    uuid_re = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
    md5_re = re.compile(r"^[0-9a-fA-F]{32}$")  # a live-synced script's script_id
    out: dict[str, Any] = {"port": int(port_text), "object": None, "script": None}
    for key in ("object", "script"):
        value = fields.get(key) or ""
        if value:
            if not uuid_re.match(value) and not (key == "script" and md5_re.match(value)):
                raise VerbError(f"{uri}: {key} {value!r} is not a UUID", 2)
            out[key] = value.lower()
    if out["object"] is None and out["script"] is None:
        raise VerbError(f"{uri}: names neither an object nor a script", 2)
    return out


def _open_uri_options(items: list[str]) -> tuple[tuple[int, ...], float]:
    """(uri_ports, connect_wait) from `slfs open-uri -o ...` (VerbError 2 for anything else)."""
    from ..model.options import parse_options

    named = {opt.strip().partition("=")[0] for group in items for opt in group.split(",")
             if opt.strip() and not opt.strip().isdigit()}  # a bare number continues uri_ports=
    other = sorted(named - set(OPEN_URI_OPTIONS))
    if other:
        raise VerbError(f"open-uri takes -o {' and -o '.join(OPEN_URI_OPTIONS)} only, not -o {', '.join(other)} "
                        "(those are mount options: slfs mount -o)", 2)
    try:
        options = parse_options(items)
    except ValueError as exc:
        raise VerbError(f"open-uri: {exc}", 2) from None
    return options.uri_ports, options.connect_wait or mounts.START_WAIT


def _check_uri_port(uri: str, port: int, uri_ports: tuple[int, ...]) -> None:
    """A URI comes from a browser, so from any web page: it starts a mount (a connection to
    whatever listens on its port) only for the default viewer port or one the user listed."""
    default = mounts.default_port()
    if port == default or port in uri_ports:
        return
    listed = f" nor in -o uri_ports={','.join(map(str, uri_ports))}" if uri_ports else " and not listed in -o uri_ports"
    edit_log(f"open-uri {uri}: refused: port {port}")
    raise VerbError(f"{uri}: port {port} is not the default viewer port ({default}){listed}; not mounting for it "
                    f"(a web page can open such a URI; if your viewer listens on {port}, add -o uri_ports={port} "
                    "to the URI handler's command line, or mount it yourself: slfs mount --port "
                    f"{port} MOUNTPOINT)", 2)


def cmd_open_uri(args: argparse.Namespace) -> int:
    uri_ports, connect_wait = _open_uri_options(getattr(args, "options", []))
    target = parse_uri(args.uri)
    port = target["port"]
    wait = mounts.START_WAIT
    if args.mount:
        entry = mounts.find_mount(args.mount)  # a mount the user names: theirs, whatever its port
    else:
        found = mounts.mount_for_port(port)  # a mount the user started for the port: used as it is
        if found is None:
            _check_uri_port(args.uri, port, uri_ports)
            found, wait = mounts.start_mount(port, connect_wait, echo=echo), connect_wait
        entry = found
    mounts.wait_connected(entry, wait)
    client = MountClient(entry)
    out: dict[str, Any] = {"mount": entry["mountpoint"], "port": port, "object": None, "script": None}
    if target["script"]:
        live_temp = client.live_temp(live_ids(target["script"], target["object"]))
        if live_temp.note:
            err(live_temp.note)
        if live_temp.path is not None:
            # A script open in the viewer's own editor: live-sync it as `slfs edit TEMPFILE` would.
            try:
                live = client.live_subscribe(live_temp.path)
                out.update(live=live, path=live["path"])
                return run_editor(live, out, wait=False, json_out=args.json)
            except (VerbError, ClientError) as exc:
                edit_log(f"open-uri {args.uri}: error: {exc}")
                raise
    out.update(client.locate(target["object"], target["script"]))
    out["path"] = (out["script"] or out["object"])["path"]
    if args.json:
        emit_json(out)
    else:
        print(out["path"])
    return 0
