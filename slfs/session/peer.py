"""Who is on the viewer's port: the owner of a local TCP socket, from /proc/net/tcp{,6}.

Anyone on the machine can listen on the viewer's port while the viewer is not running; the viewer
always runs as the user who mounts, so a socket owned by another uid is an impostor.

Two checks. Before connecting (check_listener), the listeners: the kernel hands a connection to a
listener bound to the exact address before one bound to the wildcard (0.0.0.0, ::), so only the
listeners of the first tier that has any are judged. A `::` listener may be IPV6_V6ONLY (which /proc
does not show): it is counted for IPv4 too, which can only refuse more, never less. This one only
spares an impostor that already holds the port a connection (and gives an early, clear message).

After connecting and before a byte is sent or read (check_connection), the established connection
itself: the socket at its other end is the /proc entry whose local address:port is our peer's and
whose remote address:port is ours, and its uid must be ours. This is the check that counts: another
uid that opens the port between the first check and the connect() is caught here. When the other
end is not in /proc at all and no listener on the port is either (in WSL2 the viewer listens on the
Windows side; a remote --host), nothing can be judged here: the session says it relies on the
challenge.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Iterable
from typing import Any

import attrs
import trio

from ..addresses import IPAddress, mapped

log = logging.getLogger(__name__)

LISTEN = "0A"
# The states in which the other end's entry shows the uid of the socket's owner: an accepted (or
# not yet accepted: its uid is the listener's) connection. A closing end may be a time-wait entry,
# which /proc shows with uid 0 whoever owned it: not a proof of anything.
# (Linux include/net/tcp_states.h: 01 ESTABLISHED, 03 SYN_RECV; net/ipv4/tcp_ipv4.c get_tcp4_sock,
# get_openreq4, get_timewait4_sock.)
OWNED_STATES = ("01", "03")


@attrs.frozen
class Listener:
    address: IPAddress
    port: int
    uid: int


@attrs.frozen
class TcpSocket:
    """One line of /proc/net/tcp or tcp6 (addresses as written: an IPv4 one may be IPv4-mapped)."""

    local: IPAddress
    local_port: int
    remote: IPAddress
    remote_port: int
    state: str  # two hex digits, as /proc writes it
    uid: int


def _address(hex_addr: str, byteorder: str = sys.byteorder) -> IPAddress:
    """A /proc/net address: 32-bit words, each in the host's byte order (the port is a plain number)."""
    raw = bytes.fromhex(hex_addr)
    if len(raw) not in (4, 16):
        raise ValueError(f"not an address: {hex_addr!r}")
    if byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def _endpoint(field: str, byteorder: str) -> tuple[IPAddress, int]:
    addr, sep, port = field.partition(":")
    if not sep:
        raise ValueError(f"not an address:port: {field!r}")
    return _address(addr, byteorder), int(port, 16)


def parse_sockets(text: str, byteorder: str = sys.byteorder) -> list[TcpSocket]:
    """The sockets of a /proc/net/tcp or /proc/net/tcp6 text; odd lines are skipped."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        try:
            local, local_port = _endpoint(fields[1], byteorder)
            remote, remote_port = _endpoint(fields[2], byteorder)
            out.append(TcpSocket(local, local_port, remote, remote_port, fields[3].upper(), int(fields[7])))
        except ValueError:
            continue
    return out


def parse_listeners(text: str, byteorder: str = sys.byteorder) -> list[Listener]:
    """The LISTEN-state sockets of a /proc/net/tcp or /proc/net/tcp6 text; odd lines are skipped."""
    return _listeners(parse_sockets(text, byteorder))


def _listeners(sockets: Iterable[TcpSocket]) -> list[Listener]:
    return [Listener(s.local, s.local_port, s.uid) for s in sockets if s.state == LISTEN]


def read_sockets(proc: str = "/proc") -> list[TcpSocket] | None:
    """Every TCP socket of /proc/net/tcp and tcp6; None when neither can be read (no /proc)."""
    found: list[TcpSocket] = []
    readable = False
    for name in ("net/tcp", "net/tcp6"):
        try:
            with open(os.path.join(proc, name)) as f:
                found += parse_sockets(f.read())
            readable = True
        except OSError:
            pass  # no IPv6, or no /proc: nothing to judge
    return found if readable else None


def read_listeners(proc: str = "/proc") -> list[Listener]:
    return _listeners(read_sockets(proc) or [])


def serving(listeners: Iterable[Listener], target: IPAddress, port: int) -> list[Listener]:
    """The listeners a connection to target:port may reach: those bound to it, else the wildcard ones."""
    on_port = [lst for lst in listeners if lst.port == port]
    exact = [lst for lst in on_port if mapped(lst.address) == target]
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
    targets = [mapped(t) for t in await _targets(host, port)]
    if not targets:
        return None
    sockets = await trio.to_thread.run_sync(read_sockets)
    return foreign_listener(_listeners(sockets or []), targets, port, os.geteuid())


@attrs.frozen
class PeerCheck:
    """What the /proc tables say about an established connection's other end."""

    refusal: str = ""  # not empty: not ours (or not provably ours); close without a byte sent or read
    seen: bool = True  # False: neither the other end nor a listener is in /proc; rely on the challenge


Endpoint = tuple[IPAddress, int]


def _show(addr: IPAddress, port: int) -> str:
    return f"[{addr}]:{port}" if addr.version == 6 else f"{addr}:{port}"


def judge_peer(sockets: Iterable[TcpSocket] | None, ours: Endpoint, theirs: Endpoint, uid: int) -> PeerCheck:
    """Judge the connection from `ours` (getsockname) to `theirs` (getpeername): the other end is the
    socket whose local end is `theirs` and whose remote end is `ours`, both addresses and both ports
    (IPv4-mapped addresses compared as IPv4: a v4 connection to a `::` listener shows in tcp6)."""
    if sockets is None:
        return PeerCheck(seen=False)  # no /proc: nothing to judge
    sockets = list(sockets)
    our_addr, our_port = mapped(ours[0]), ours[1]
    their_addr, their_port = mapped(theirs[0]), theirs[1]
    where = _show(their_addr, their_port)
    ends = [s for s in sockets
            if (mapped(s.local), s.local_port, mapped(s.remote), s.remote_port)
            == (their_addr, their_port, our_addr, our_port)]
    if not ends:
        if serving(_listeners(sockets), their_addr, their_port):
            return PeerCheck(f"the other end of our connection to {where} is not in /proc/net/tcp though a "
                             "listener on the port is; not talking to it")
        return PeerCheck(seen=False)
    owned = [s for s in ends if s.state in OWNED_STATES]
    if not owned:
        return PeerCheck(f"the other end of our connection to {where} is already closing (state "
                         f"{ends[0].state}), its owner unknown; not talking to it")
    for end in owned:
        if end.uid != uid:
            return PeerCheck(f"the connection to {where} is served by uid {end.uid}, not by us (uid {uid}); "
                             "not talking to it")
    return PeerCheck()


def _endpoint_of(sockaddr: Any) -> Endpoint:
    host, port = sockaddr[:2]  # (host, port), or (host, port, flowinfo, scope_id) for IPv6
    return ipaddress.ip_address(str(host).partition("%")[0]), int(port)


async def check_connection(sock: trio.socket.SocketType) -> PeerCheck:
    """After connect() and before anything is sent or read: who holds the other end of `sock`.
    The table is read now, after the connection exists, so whoever serves it is who is judged."""
    try:
        ours, theirs = _endpoint_of(sock.getsockname()), _endpoint_of(sock.getpeername())
    except (OSError, ValueError) as exc:  # not connected any more, or not an IP socket
        return PeerCheck(f"cannot tell who is at the other end of the connection: {exc}")
    sockets = await trio.to_thread.run_sync(read_sockets)
    return judge_peer(sockets, ours, theirs, os.geteuid())
