"""The owner of the viewer's listener, from sample /proc/net/tcp{,6} text."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys

import pytest
import trio

from slfs import addresses
from slfs.session import peer

pytestmark = pytest.mark.skipif(sys.byteorder != "little", reason="the samples are little-endian /proc text")

TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2344 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 289983 1 0000 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 622 1 0000 100 0 0 10 0
   2: 0100007F:2344 0100007F:9B66 01 00000000:00000000 03:00000FB4 00000000     0        0 0 3 0000
   3: garbage
"""

TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2344 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2 1 0000 100 0 0 10 0
   2: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 3 1 0000 100 0 0 10 0
"""  # noqa: E501 - real /proc lines

LOCAL = ipaddress.ip_address("127.0.0.1")
LOCAL6 = ipaddress.ip_address("::1")


def test_parse_listeners_reads_address_port_uid_of_listen_lines_only() -> None:
    got = peer.parse_listeners(TCP)
    assert got == [peer.Listener(LOCAL, 9028, 1001), peer.Listener(ipaddress.ip_address("0.0.0.0"), 2024, 0)]
    got6 = peer.parse_listeners(TCP6)
    assert got6 == [
        peer.Listener(LOCAL6, 9028, 0),
        peer.Listener(ipaddress.ip_address("::ffff:127.0.0.1"), 8080, 1002),
        peer.Listener(ipaddress.ip_address("::"), 80, 33),
    ]


def test_foreign_listener_on_the_exact_address_is_refused_with_its_uid() -> None:
    listeners = peer.parse_listeners(TCP)
    why = peer.foreign_listener(listeners, [LOCAL], 9028, 0)
    assert why == "the listener on 127.0.0.1:9028 belongs to uid 1001, not to us (uid 0); not connecting"
    assert peer.foreign_listener(listeners, [LOCAL], 9028, 1001) is None


def test_no_listener_is_no_refusal() -> None:
    assert peer.foreign_listener(peer.parse_listeners(TCP), [LOCAL], 9020, 0) is None
    assert peer.foreign_listener([], [LOCAL], 9020, 0) is None


def test_v4_mapped_and_ipv6_listeners() -> None:
    listeners = peer.parse_listeners(TCP6)
    assert "uid 1002" in (peer.foreign_listener(listeners, [LOCAL], 8080, 0) or "")
    assert peer.foreign_listener(listeners, [LOCAL6], 9028, 0) is None
    why = peer.foreign_listener(listeners, [LOCAL6], 9028, 5)
    assert why is not None and "[::1]:9028" in why and "uid 0" in why


def test_wildcard_counts_only_when_nothing_is_bound_to_the_address() -> None:
    listeners = [
        peer.Listener(ipaddress.ip_address("0.0.0.0"), 9020, 1001),
        peer.Listener(ipaddress.ip_address("::"), 9021, 1002),
    ]
    assert "uid 1001" in (peer.foreign_listener(listeners, [LOCAL], 9020, 0) or "")
    assert "uid 1002" in (peer.foreign_listener(listeners, [LOCAL], 9021, 0) or "")  # :: may take IPv4
    assert peer.foreign_listener(listeners, [LOCAL6], 9020, 0) is None  # 0.0.0.0 takes no IPv6
    # Our own listener bound to the address gets the connection before the wildcard one.
    ours = [*listeners, peer.Listener(LOCAL, 9020, 0)]
    assert peer.foreign_listener(ours, [LOCAL], 9020, 0) is None


def test_loopback_hosts() -> None:
    assert addresses.is_loopback("127.0.0.1")
    assert addresses.is_loopback("127.3.4.5")
    assert addresses.is_loopback("::1")
    assert addresses.is_loopback("localhost")
    assert not addresses.is_loopback("10.1.2.3")
    assert not addresses.is_loopback("::ffff:10.1.2.3")
    assert not addresses.is_loopback("no-such-host.invalid")


async def test_check_listener_reads_the_real_proc() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with trio.fail_after(10):
            assert await peer.check_listener("127.0.0.1", port) is None  # our own
            assert await peer.check_listener("localhost", port) is None
        assert peer.Listener(LOCAL, port, os.geteuid()) in peer.read_listeners()
