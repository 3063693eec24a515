"""`mqttchat chat` on a real 3-node ejabberd cluster (scripts/cluster.sh, fixtures in cluster_support.py): members
on different nodes see each other, talk, send gifts and direct messages, and see a member (or a whole node) vanish.

The chat's presence needs no retained message (on this cluster a retained message stays on the node that stored
it: test_cluster_client.py): members heartbeat in every room and answer a newcomer's who-is-here, and a member
whose heartbeats stop is dropped after about 10 s, which is how members on a node that dies (their wills die with
it) are seen leaving. Timings are generous upper bounds on convergence: the heartbeat timeout with the chat's
default interval (not shortened here), and a member must be seen leaving within LEAVE_WAIT.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from cli_helpers import CLIProcess, cli_factory  # noqa: F401
from conftest import unique

TIME = r"\[\d\d:\d\d:\d\d\]"
# Seeing a member that is already in the room (who-is-here answered by every member).
PRESENT_WAIT = 20.0
# Seeing a vanished member leave: the heartbeat timeout (about 10 s) and some.
LEAVE_WAIT = 25.0


def room_name() -> str:
    return unique("room").replace("/", "-")


def chat_on(cli_factory, node, room: str, name: str, tmp_path: Path) -> CLIProcess:
    """A `mqttchat chat` session on `node` that has joined `room` (its history in tmp_path/<name>.sqlite)."""
    p = cli_factory(["chat", *node.cli_args(), "--room", room, "--name", name,
                     "--history-db", str(tmp_path / f"{name}.sqlite"), "--linger", "0.5"])
    p.wait_for(rf"^\* joined #{re.escape(room)} as ")
    return p


def next_line(p: CLIProcess, pattern: str, timeout: float) -> str:
    """The next stdout line matching `pattern` that arrives from now on (earlier lines do not count)."""
    fresh: list[str] = []
    try:
        return p._wait(p.out, fresh, pattern, timeout)
    finally:
        p.lines.extend(fresh)


def members(p: CLIProcess, room: str, expected: str, timeout: float = PRESENT_WAIT) -> None:
    """Asks `/members` until the answer is `expected`, for up to `timeout` s (presence converges)."""
    deadline = time.monotonic() + timeout
    while True:
        p.send("/members")
        answer = next_line(p, r"^\* members of #", timeout=10)
        if answer == f"* members of #{room}: {expected}" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert answer == f"* members of #{room}: {expected}", p.lines


def test_cluster_chat_members_on_three_nodes_see_each_other(ejabberd_cluster, cli_factory, tmp_path):
    """alice on node 1, then bob on node 2, then carol on node 3: each sees the two others, whether they came before
    or after, and /members lists all three everywhere: who-is-here, not retained messages, tells them."""
    node1, node2, node3 = ejabberd_cluster
    room = room_name()
    alice = chat_on(cli_factory, node1, room, "alice", tmp_path)
    bob = chat_on(cli_factory, node2, room, "bob", tmp_path)
    carol = chat_on(cli_factory, node3, room, "carol", tmp_path)
    for p, others in ((alice, ("bob", "carol")), (bob, ("alice", "carol")), (carol, ("alice", "bob"))):
        for other in others:
            p.wait_for(rf"^{TIME} \* {other} is here$", timeout=PRESENT_WAIT)
    for p in (alice, bob, carol):
        members(p, room, "alice, bob, carol")
    # A member on another node is known to be online: a direct message to alice goes out without a warning.
    carol.send("/dm alice are you there?")
    carol.wait_for(rf"^{TIME} \(dm to alice\) are you there\?$")
    alice.wait_for(rf"^{TIME} \(dm from carol\) are you there\?$")
    assert not any(line.startswith("* no user") for line in carol.lines), carol.lines
    for p in (alice, bob, carol):
        p.send("/quit")
        assert p.finish() == 0, p.err_lines


def test_cluster_chat_text_and_gifts_cross_nodes(ejabberd_cluster, cli_factory, tmp_path):
    """Members on three nodes each say something and send a gift; everyone sees everything, once."""
    node1, node2, node3 = ejabberd_cluster
    room = room_name()
    chats = {"alice": chat_on(cli_factory, node1, room, "alice", tmp_path),
             "bob": chat_on(cli_factory, node2, room, "bob", tmp_path),
             "carol": chat_on(cli_factory, node3, room, "carol", tmp_path)}
    gifts = {"alice": "rose 3", "bob": "cake", "carol": "star 2"}
    shown = {"alice": "rose x3", "bob": "cake x1", "carol": "star x2"}
    for name, p in chats.items():
        p.send(f"hello from {name}")
        p.send(f"/gift {gifts[name]}")
    for p in chats.values():
        for name in chats:
            p.wait_for(rf"^{TIME} {name}: hello from {name}$")
            p.wait_for(rf"^{TIME} {name}: sent a gift: {shown[name]}$")
    for p in chats.values():
        p.send("/quit")
        assert p.finish() == 0, p.err_lines
    for name, p in chats.items():
        for sender in chats:
            assert sum(bool(re.search(rf"{TIME} {sender}: hello from {sender}$", line)) for line in p.lines) == 1, \
                (name, p.lines)
            assert sum(line.endswith(f"{sender}: sent a gift: {shown[sender]}") for line in p.lines) == 1, \
                (name, p.lines)


def test_cluster_chat_direct_messages_cross_nodes(ejabberd_cluster, cli_factory, tmp_path):
    """Direct messages around the ring alice (node 1) -> bob (node 2) -> carol (node 3) -> alice: each reaches its
    recipient only."""
    node1, node2, node3 = ejabberd_cluster
    room = room_name()
    alice = chat_on(cli_factory, node1, room, "alice", tmp_path)
    bob = chat_on(cli_factory, node2, room, "bob", tmp_path)
    carol = chat_on(cli_factory, node3, room, "carol", tmp_path)
    ring = ((alice, "alice", bob, "bob"), (bob, "bob", carol, "carol"), (carol, "carol", alice, "alice"))
    for sender, sender_name, _, recipient_name in ring:
        sender.send(f"/dm {recipient_name} secret from {sender_name}")
        sender.wait_for(rf"^{TIME} \(dm to {recipient_name}\) secret from {sender_name}$")
    for _, sender_name, recipient, _ in ring:
        recipient.wait_for(rf"^{TIME} \(dm from {sender_name}\) secret from {sender_name}$")
    for p in (alice, bob, carol):
        p.send("/quit")
        assert p.finish() == 0, p.err_lines
    for _, sender_name, recipient, recipient_name in ring:
        for name, p in (("alice", alice), ("bob", bob), ("carol", carol)):
            received = sum(f"(dm from {sender_name}) secret from {sender_name}" in line for line in p.lines)
            assert received == (1 if name == recipient_name else 0), (name, p.lines)


def test_cluster_chat_member_killed_on_node1_seen_leaving(ejabberd_cluster, cli_factory, tmp_path):
    """bob (node 2) and carol (node 3) see alice arrive on node 1; alice is killed (SIGKILL, no goodbye) and both see
    her leave within the heartbeat timeout."""
    node1, node2, node3 = ejabberd_cluster
    room = room_name()
    bob = chat_on(cli_factory, node2, room, "bob", tmp_path)
    carol = chat_on(cli_factory, node3, room, "carol", tmp_path)
    alice = chat_on(cli_factory, node1, room, "alice", tmp_path)
    for p in (bob, carol):
        p.wait_for(rf"^{TIME} \* alice is here$", timeout=PRESENT_WAIT)
    alice.kill()
    for p in (bob, carol):
        p.wait_for(rf"^{TIME} \* alice (went offline|went offline \(no heartbeat\)|left)$", timeout=LEAVE_WAIT)
    bob.send("still here")
    carol.wait_for(rf"^{TIME} bob: still here$")
    for p in (bob, carol):
        p.send("/quit")
        assert p.finish() == 0, p.err_lines


def test_cluster_chat_membership_converges_after_a_node_dies(ejabberd_cluster, cli_factory, tmp_path):
    """A network partition, simulated by killing node 1 (SIGKILL of its VM: its clients' wills die with it).
    bob (node 2) and carol (node 3) see alice and dave (node 1) leave within the heartbeat timeout, keep chatting,
    and /members converges to the two of them. The next test using the cluster gets a fresh one."""
    node1, node2, node3 = ejabberd_cluster
    room = room_name()
    bob = chat_on(cli_factory, node2, room, "bob", tmp_path)
    carol = chat_on(cli_factory, node3, room, "carol", tmp_path)
    alice = chat_on(cli_factory, node1, room, "alice", tmp_path)
    dave = chat_on(cli_factory, node1, room, "dave", tmp_path)
    everyone = {"alice": alice, "bob": bob, "carol": carol, "dave": dave}
    for name, p in everyone.items():
        for other in everyone:
            if other != name:
                p.wait_for(rf"^{TIME} \* {other} is here$", timeout=PRESENT_WAIT)

    node1.kill()
    for p in (bob, carol):
        for gone in ("alice", "dave"):
            p.wait_for(rf"^{TIME} \* {gone} (went offline|went offline \(no heartbeat\)|left)$", timeout=LEAVE_WAIT)
    bob.send("node 1 is gone")
    carol.wait_for(rf"^{TIME} bob: node 1 is gone$")
    carol.send("/gift umbrella")
    bob.wait_for(rf"^{TIME} carol: sent a gift: umbrella x1$")
    bob.send("/dm carol just us now")
    carol.wait_for(rf"^{TIME} \(dm from bob\) just us now$")
    for p in (bob, carol):
        members(p, room, "bob, carol")
    for p in (bob, carol):
        p.send("/quit")
        assert p.finish() == 0, p.err_lines
