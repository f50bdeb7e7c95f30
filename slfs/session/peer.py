"""Who is listening on the viewer's port: the owner of a local TCP listener, from /proc/net/tcp{,6}.

Anyone on the machine can listen on the viewer's port while the viewer is not running; the viewer
always runs as the user who mounts, so a listener owned by another uid is an impostor and is not
connected to. The kernel hands a connection to a listener bound to the exact address before one
bound to the wildcard (0.0.0.0, ::), so only the listeners of the first tier that has any are judged.
A `::` listener may be IPV6_V6ONLY (which /proc does not show): it is counted for IPv4 too, which
can only refuse more, never less. No listener found is not a refusal: the connect then fails as
usual (in WSL2, where the viewer's listener is on the Windows side, the session says it relies on
the challenge: listener_visible).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Iterable

import attrs
import trio

log = logging.getLogger(__name__)

LISTEN = "0A"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@attrs.frozen
class Listener:
    address: IPAddress
    port: int
    uid: int


def _address(hex_addr: str) -> IPAddress:
    """A /proc/net address: 32-bit words, each in the host's byte order."""
    raw = bytes.fromhex(hex_addr)
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def parse_listeners(text: str) -> list[Listener]:
    """The LISTEN-state sockets of a /proc/net/tcp or /proc/net/tcp6 text; odd lines are skipped."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or fields[3] != LISTEN:
            continue
        try:
            addr, _, port = fields[1].partition(":")
            out.append(Listener(_address(addr), int(port, 16), int(fields[7])))
        except ValueError:
            continue
    return out


def read_listeners(proc: str = "/proc") -> list[Listener]:
    found: list[Listener] = []
    for name in ("net/tcp", "net/tcp6"):
        try:
            with open(os.path.join(proc, name)) as f:
                found += parse_listeners(f.read())
        except OSError:
            pass  # no IPv6, or no /proc: nothing to judge
    return found


def _mapped(addr: IPAddress) -> IPAddress:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def serving(listeners: Iterable[Listener], target: IPAddress, port: int) -> list[Listener]:
    """The listeners a connection to target:port may reach: those bound to it, else the wildcard ones."""
    on_port = [lst for lst in listeners if lst.port == port]
    exact = [lst for lst in on_port if _mapped(lst.address) == target]
    if exact:
        return exact
    v4 = isinstance(target, ipaddress.IPv4Address)
    return [lst for lst in on_port
            if lst.address == ipaddress.IPv6Address("::") or (v4 and lst.address == ipaddress.IPv4Address(0))]


def foreign_listener(listeners: Iterable[Listener], targets: Iterable[IPAddress], port: int,
                     uid: int) -> str | None:
    """Why not to connect (a listener of another uid on one of the targets), or None."""
    listeners = list(listeners)
    for target in targets:
        for lst in serving(listeners, target, port):
            if lst.uid != uid:
                where = f"[{target}]:{port}" if target.version == 6 else f"{target}:{port}"
                return f"the listener on {where} belongs to uid {lst.uid}, not to us (uid {uid}); not connecting"
    return None


async def _targets(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []  # the connect reports it
    out: list[IPAddress] = []
    for info in infos:
        try:
            addr = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        except ValueError:
            continue
        if addr not in out:
            out.append(addr)
    return out


async def check_listener(host: str, port: int) -> str | None:
    """Before connecting to host:port: the reason to refuse (a listener of another uid), or None."""
    targets = [_mapped(t) for t in await _targets(host, port)]
    if not targets:
        return None
    listeners = await trio.to_thread.run_sync(read_listeners)
    return foreign_listener(listeners, targets, port, os.geteuid())


async def listener_visible(host: str, port: int) -> bool:
    """Whether any listener a connection to host:port may reach shows in /proc/net/tcp{,6}. In WSL2
    the viewer listens on the Windows side (mirrored networking shares 127.0.0.1): it never shows."""
    targets = [_mapped(t) for t in await _targets(host, port)]
    listeners = await trio.to_thread.run_sync(read_listeners)
    return any(serving(listeners, target, port) for target in targets)


def is_loopback(host: str) -> bool:
    """Whether `host` names only loopback addresses (resolved through the system's resolver)."""
    try:
        return _mapped(ipaddress.ip_address(host)).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addrs = {str(info[4][0]).partition("%")[0] for info in infos}
    return bool(addrs) and all(_mapped(ipaddress.ip_address(a)).is_loopback for a in addrs)
