"""The other end of an established connection, found in /proc/net/tcp{,6} by both its addresses and
both its ports (peer.judge_peer), from real lines in both byte orders and from the real /proc."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys

import pytest
import trio

from slfs.session import peer

# Real lines (Linux 6.x, little-endian): a v4 client 127.0.0.1:52290 to a `::` listener on 57465
# (the client in tcp, the accepted end in tcp6, v4-mapped), a v6 client [::1]:48574 to [::1]:47401,
# a v4-mapped v6 client [::ffff:127.0.0.1]:32918 to a 127.0.0.1:37239 listener (the other way round).
TCP_LE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9177 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 12875 1 000000000dfbfcb4 100 0 0 10 0
   1: 0100007F:CC42 0100007F:E079 01 00000000:00000000 00:00000000 00000000     0        0 12873 2 0000000043122982 20 0 0 10 -1
   2: 0100007F:9177 0100007F:8096 01 00000000:00000000 00:00000000 00000000  1001        0 12877 1 00000000e18e5044 20 0 0 10 -1
"""  # noqa: E501 - real /proc lines
TCP6_LE = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:E079 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 12872 1 000000009758721b 100 0 0 10 0
   1: 00000000000000000000000001000000:B929 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 12878 1 00000000a276d2e1 100 0 0 10 0
   2: 00000000000000000000000001000000:B929 00000000000000000000000001000000:BDBE 01 00000000:00000000 00:00000000 00000000  1003        0 12880 1 000000001d7cc755 20 0 0 10 -1
   3: 0000000000000000FFFF00000100007F:8096 0000000000000000FFFF00000100007F:9177 01 00000000:00000000 00:00000000 00000000     0        0 12876 2 0000000001793d32 20 0 0 10 -1
   4: 00000000000000000000000001000000:BDBE 00000000000000000000000001000000:B929 01 00000000:00000000 00:00000000 00000000     0        0 12879 2 00000000c42d2d1a 20 0 0 10 -1
   5: 0000000000000000FFFF00000100007F:E079 0000000000000000FFFF00000100007F:CC42 01 00000000:00000000 00:00000000 00000000  1002        0 12874 1 0000000024e1845e 20 0 0 10 -1
"""  # noqa: E501 - real /proc lines


def big_endian(text: str) -> str:
    """The same table as a big-endian host writes it: each 32-bit word of an address byte-swapped
    (ports are numbers, written the same on both)."""
    def swap(field: str) -> str:
        addr, _, port = field.partition(":")
        words = [addr[i:i + 8] for i in range(0, len(addr), 8)]
        return "".join(bytes.fromhex(w)[::-1].hex().upper() for w in words) + ":" + port

    lines = text.splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        f = line.split()
        out.append(" ".join([f[0], swap(f[1]), swap(f[2]), *f[3:]]))
    return "\n".join(out) + "\n"


def ip(text: str) -> peer.IPAddress:
    return ipaddress.ip_address(text)


V4 = ip("127.0.0.1")
V6 = ip("::1")
MAPPED = ip("::ffff:127.0.0.1")


@pytest.fixture(params=["little", "big"])
def table(request: pytest.FixtureRequest) -> list[peer.TcpSocket]:
    order = request.param
    tcp, tcp6 = (TCP_LE, TCP6_LE) if order == "little" else (big_endian(TCP_LE), big_endian(TCP6_LE))
    return peer.parse_sockets(tcp, order) + peer.parse_sockets(tcp6, order)


def test_parse_sockets_reads_both_ends_state_and_uid() -> None:
    got = peer.parse_sockets(TCP_LE, "little")
    assert got[1] == peer.TcpSocket(V4, 52290, V4, 57465, "01", 0)
    assert peer.parse_sockets(big_endian(TCP_LE), "big") == got
    got6 = peer.parse_sockets(TCP6_LE, "little")
    assert got6[5] == peer.TcpSocket(MAPPED, 57465, MAPPED, 52290, "01", 1002)
    assert got6[2] == peer.TcpSocket(V6, 47401, V6, 48574, "01", 1003)


def test_v4_connection_served_from_tcp6_by_a_dual_stack_listener(table: list[peer.TcpSocket]) -> None:
    # Our end 127.0.0.1:52290 (uid 0), theirs in tcp6 as ::ffff:127.0.0.1:57465, owned by 1002.
    got = peer.judge_peer(table, (V4, 52290), (V4, 57465), 0)
    want = "the connection to 127.0.0.1:57465 is served by uid 1002, not by us (uid 0); not talking to it"
    assert got.refusal == want
    assert peer.judge_peer(table, (V4, 52290), (V4, 57465), 1002) == peer.PeerCheck()


def test_v4_mapped_client_to_a_v4_listener(table: list[peer.TcpSocket]) -> None:
    # Our end is an AF_INET6 socket (getsockname says ::ffff:127.0.0.1); theirs is in tcp, uid 1001.
    got = peer.judge_peer(table, (MAPPED, 32918), (MAPPED, 37239), 0)
    assert "served by uid 1001" in got.refusal and "127.0.0.1:37239" in got.refusal
    assert peer.judge_peer(table, (MAPPED, 32918), (MAPPED, 37239), 1001) == peer.PeerCheck()


def test_v6_connection(table: list[peer.TcpSocket]) -> None:
    assert "served by uid 1003" in peer.judge_peer(table, (V6, 48574), (V6, 47401), 0).refusal
    assert "[::1]:47401" in peer.judge_peer(table, (V6, 48574), (V6, 47401), 0).refusal
    assert peer.judge_peer(table, (V6, 48574), (V6, 47401), 1003) == peer.PeerCheck()


def test_both_ports_must_match(table: list[peer.TcpSocket]) -> None:
    # Our own end (local 52290, remote 57465, uid 0) is never taken for theirs, and an entry that
    # matches only the listener's port is not the other end: uid 0 passes nowhere below.
    assert peer.judge_peer(table, (V4, 52290), (V4, 57465), 0).refusal
    # Another client port to the same listener: no such connection, and the listener is visible.
    got = peer.judge_peer(table, (V4, 40000), (V4, 57465), 1002)
    assert got.refusal.startswith("the other end of our connection to 127.0.0.1:57465 is not in /proc/net/tcp")


def test_an_address_mismatch_is_not_the_other_end(table: list[peer.TcpSocket]) -> None:
    got = peer.judge_peer(table, (ip("127.0.0.2"), 52290), (V4, 57465), 1002)
    assert "not in /proc/net/tcp" in got.refusal


def test_nothing_visible_relies_on_the_challenge() -> None:
    # No entry and no listener on the port (a Windows viewer behind WSL2, another host), or no /proc.
    assert peer.judge_peer([], (V4, 50000), (V4, 9020), 0) == peer.PeerCheck(seen=False)
    assert peer.judge_peer(None, (V4, 50000), (V4, 9020), 0) == peer.PeerCheck(seen=False)


def test_a_closing_end_proves_nobody() -> None:
    # A time-wait entry shows uid 0 whoever owned it: not a proof, even when we are root.
    tw = peer.TcpSocket(V4, 9020, V4, 50000, "06", 0)
    assert "already closing (state 06)" in peer.judge_peer([tw], (V4, 50000), (V4, 9020), 0).refusal
    # Not yet accepted: the entry carries the listener's uid.
    syn = peer.TcpSocket(V4, 9020, V4, 50000, "03", 0)
    assert peer.judge_peer([syn], (V4, 50000), (V4, 9020), 0) == peer.PeerCheck()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
@pytest.mark.parametrize("family,host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"),
                                         (socket.AF_INET6, "::ffff:127.0.0.1")])
async def test_check_connection_reads_the_real_proc(family: int, host: str) -> None:
    server_family = socket.AF_INET if host == "127.0.0.1" else socket.AF_INET6
    with socket.socket(server_family) as lsock:
        lsock.bind(("::" if server_family == socket.AF_INET6 else host, 0))
        lsock.listen(1)
        port = lsock.getsockname()[1]
        with trio.fail_after(10):
            client = trio.socket.socket(family)
            with client:
                await client.connect((host, port))
                assert await peer.check_connection(client) == peer.PeerCheck()
                # The same connection judged for another uid: refused, by its uid.
                ours, theirs = client.getsockname(), client.getpeername()
                table = await trio.to_thread.run_sync(peer.read_sockets)
                got = peer.judge_peer(table, (ip(ours[0]), ours[1]), (ip(theirs[0]), theirs[1]), os.geteuid() + 1)
                assert f"served by uid {os.geteuid()}" in got.refusal
