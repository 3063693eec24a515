"""Our broker as an edge node of the 3-node ejabberd cluster (scripts/cluster.sh): a `connection` bridge to node 1
(docs/bridges.md) carries the chat's topics both ways, so `mqttchat chat` users on our broker and on cluster nodes
2 and 3 see each other, talk, send gifts and direct messages, and see a killed edge user leave; QoS 1 messages
cross in both directions with none lost. The remote restart under 10,000 QoS 1 messages is in test_bridge.py
(against a real mosquitto, which restarts in a moment; an ejabberd node does not)."""

from __future__ import annotations

import re
import uuid

import pytest

from cli_helpers import cli_factory  # noqa: F401
from cluster_support import LOGIN
from conftest import Client, mqttchat_bin, unique
from bridge_helpers import Bridged
from test_cluster_chat import LEAVE_WAIT, PRESENT_WAIT, TIME, chat_on, room_name

pytestmark = pytest.mark.skipif(mqttchat_bin() is None, reason="MQTTCHAT_BIN is unset: these tests need our broker")

GONE = r"(went offline|went offline \(no heartbeat\)|left)"


@pytest.fixture
def edge(ejabberd_cluster, tmp_path, request):
    """Our broker, bridged to node 1 for everything under `mqttchat/` and `edge-test/` (MQTT 5: No Local keeps
    messages from coming back), started and stopped by the test."""
    node1 = ejabberd_cluster[0]
    lines = [
        "connection cluster", f"address 127.0.0.1:{node1.port}",
        "topic mqttchat/# both 2", "topic edge-test/# both 1",
        "bridge_protocol_version mqttv50", f"remote_clientid edge-{uuid.uuid4().hex[:8]}",
        f"remote_username {LOGIN[0]}", f"remote_password {LOGIN[1]}", "restart_timeout 1 2",
        "keepalive_interval 10",
    ]
    directory = tmp_path / "edge"
    directory.mkdir()
    broker = Bridged("mqttchat", directory, {}, lines)
    broker.start()
    yield broker
    broker.stop()
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(f"===== edge broker =====\n{broker.config_text()}\n{broker.output()[-6000:]}")


class EdgeBroker:
    """Where `chat_on` connects for our broker: its port, no login."""

    def __init__(self, port: int):
        self.port = port

    def cli_args(self) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.port)]


def wait_bridge_up(edge_broker, node, timeout: float = 20.0) -> None:
    """Until a probe published on our broker reaches a subscriber on `node` (the bridge has connected and
    subscribed)."""
    watcher = Client(node.port, login=LOGIN).connect()
    publisher = Client(edge_broker.port).connect()
    try:
        topic = f"edge-test/{unique('probe')}"
        watcher.subscribe(topic, 1)
        for _ in range(int(timeout)):
            publisher.publish(topic, b"probe", 1)
            try:
                watcher.get(1.0)
                return
            except AssertionError:
                continue
        raise AssertionError("nothing crossed the bridge to the cluster")
    finally:
        watcher.stop()
        publisher.stop()


def test_chat_between_an_edge_broker_and_the_cluster(ejabberd_cluster, edge, cli_factory, tmp_path):
    """alice on our broker, bob on node 2, carol on node 3: all see each other, text crosses both ways, a gift and
    direct messages reach their user, and alice killed on the edge is seen leaving on the cluster."""
    _, node2, node3 = ejabberd_cluster
    wait_bridge_up(edge, node2)
    room = room_name()
    alice = chat_on(cli_factory, EdgeBroker(edge.port), room, "alice", tmp_path)
    bob = chat_on(cli_factory, node2, room, "bob", tmp_path)
    carol = chat_on(cli_factory, node3, room, "carol", tmp_path)
    for p, others in ((alice, ("bob", "carol")), (bob, ("alice", "carol")), (carol, ("alice", "bob"))):
        for other in others:
            p.wait_for(rf"^{TIME} \* {other} is here$", timeout=PRESENT_WAIT)
    alice.send("hello from the edge")
    for p in (bob, carol):
        p.wait_for(rf"^{TIME} alice: hello from the edge$")
    bob.send("hello from the cluster")
    alice.wait_for(rf"^{TIME} bob: hello from the cluster$")
    carol.send("/gift rose 3")
    alice.wait_for(rf"^{TIME} carol: sent a gift: rose x3$")
    bob.send("/dm alice just for you")
    alice.wait_for(rf"^{TIME} \(dm from bob\) just for you$")
    alice.send("/dm carol and you")
    carol.wait_for(rf"^{TIME} \(dm from alice\) and you$")
    alice.kill()
    for p in (bob, carol):
        p.wait_for(rf"^{TIME} \* alice {GONE}$", timeout=LEAVE_WAIT)
    # Exactly once: the bridge's No Local keeps the edge's messages from coming back through it.
    assert sum(1 for line in bob.lines if re.search(r"alice: hello from the edge$", line)) == 1, bob.lines


@pytest.mark.parametrize("direction", ["edge to cluster", "cluster to edge"])
def test_qos1_messages_cross_the_bridge_none_lost(ejabberd_cluster, edge, direction):
    """1,000 QoS 1 messages through the bridge, each way: every one arrives (duplicates are allowed at QoS 1,
    losses are not)."""
    _, node2, node3 = ejabberd_cluster
    wait_bridge_up(edge, node2)
    topic = f"edge-test/{unique('load')}"
    if direction == "edge to cluster":
        receiver, sender = Client(node3.port, login=LOGIN), Client(edge.port)
    else:
        receiver, sender = Client(edge.port), Client(node3.port, login=LOGIN)
    receiver.connect()
    sender.connect()
    try:
        receiver.subscribe(topic, 1)
        count = 1000
        for index in range(count):
            sender.c.publish(topic, str(index).encode(), 1)
        seen: set[int] = set()
        while len(seen) < count:
            seen.add(int(receiver.get(timeout=30).payload))
        assert seen == set(range(count))
    finally:
        receiver.stop()
        sender.stop()
