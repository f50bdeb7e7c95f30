"""Addresses of this machine: the one form of an IPv4-mapped IPv6 address, and whether a host
name means only loopback. Shared by the session (which checks whose listener it reaches) and the
CLI (which refuses a --host that is not loopback)."""

from __future__ import annotations

import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def mapped(addr: IPAddress) -> IPAddress:
    """`::ffff:127.0.0.1` is 127.0.0.1."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def is_loopback(host: str) -> bool:
    """Whether `host` names only loopback addresses (resolved through the system's resolver)."""
    try:
        return mapped(ipaddress.ip_address(host)).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addrs = {str(info[4][0]).partition("%")[0] for info in infos}
    return bool(addrs) and all(mapped(ipaddress.ip_address(a)).is_loopback for a in addrs)
