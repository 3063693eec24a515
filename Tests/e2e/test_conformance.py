"""MQTT 3.1/3.1.1 behaviour where an independent conformance suite found our broker departing from mosquitto
without the specification asking for it. Each case runs against our broker and a real mosquitto."""
import pytest

import mqtt_raw as raw
from conftest import unique


def _delivery(broker, raw_factory, qos: int):
    """A subscriber at `qos` that has just received one PUBLISH from another client; returns it and the PUBLISH."""
    topic = unique("conf")
    sub = raw_factory(broker)
    sub.connect_ok("s-" + topic.split("/")[-1])
    assert sub.subscribe([(topic, qos)]) == [qos]
    pub = raw_factory(broker)
    pub.connect_ok("p-" + topic.split("/")[-1])
    pub.send(raw.publish(topic, b"m", qos, 1))
    if qos == 2:  # mosquitto forwards a QoS 2 message once it is released; ours at once (both allowed, 4.3.3)
        assert pub.expect(raw.PUBREC).pid == 1
        pub.send(raw.pubrel(1))
        assert pub.expect(raw.PUBCOMP).pid == 1
    delivered = sub.next_publish()
    assert delivered.qos == qos
    return sub, delivered


def test_mqtt31_connack_has_no_session_present_flag(broker, raw_factory):
    # MQTT 3.1 (MQIsdp, level 3) has no session-present flag: the first byte of its CONNACK is reserved, 0,
    # even when a stored session is resumed.
    cid = "v31-" + unique("c").split("/")[-1]
    first = raw_factory(broker)
    ack = first.connect(cid, clean=False, proto_name="MQIsdp", level=3)
    assert ack.body == b"\x00\x00"
    first.close()
    second = raw_factory(broker)
    ack = second.connect(cid, clean=False, proto_name="MQIsdp", level=3)
    assert ack.body == b"\x00\x00"
    # The same resumption at 3.1.1 does report it.
    third = raw_factory(broker)
    cid311 = "v311-" + unique("c").split("/")[-1]
    assert not third.connect_ok(cid311, clean=False)
    third.close()
    fourth = raw_factory(broker)
    assert fourth.connect_ok(cid311, clean=False)


@pytest.mark.parametrize(
    "qos, wrong",
    [(1, raw.pubrec), (1, raw.pubcomp), (2, raw.puback), (2, raw.pubcomp)],
    ids=["PUBREC-for-QoS1", "PUBCOMP-for-QoS1", "PUBACK-for-QoS2", "PUBCOMP-before-PUBREL"],
)
def test_acknowledgement_out_of_flow_closes_the_connection(broker, raw_factory, qos, wrong):
    sub, delivered = _delivery(broker, raw_factory, qos)
    sub.send(wrong(delivered.pid))
    assert sub.closed_within(3)
    assert broker.alive()


def test_acknowledgement_in_flow_keeps_the_connection(broker, raw_factory):
    # The control case for the test above: the right acknowledgements complete the flows.
    sub, delivered = _delivery(broker, raw_factory, 2)
    sub.send(raw.pubrec(delivered.pid))
    assert sub.expect(raw.PUBREL).pid == delivered.pid
    sub.send(raw.pubcomp(delivered.pid))
    sub.expect_nothing(0.5)


def test_publish_deeper_than_the_broker_allows_closes_the_connection(broker, raw_factory):
    client = raw_factory(broker)
    client.connect_ok("deep-" + unique("d").split("/")[-1])
    client.send(raw.publish("/".join(["a"] * 300), b"x", 1, 7))
    assert client.closed_within(3)
    assert broker.alive()


def test_subscribe_deeper_than_the_broker_allows_closes_the_connection(broker, raw_factory):
    client = raw_factory(broker)
    client.connect_ok("deep-" + unique("d").split("/")[-1])
    client.send(raw.subscribe(1, [("/".join(["a"] * 300), 0)]))
    assert client.closed_within(3)
    assert broker.alive()


def test_own_acknowledgement_comes_before_own_message(broker, broker_kind, raw_factory):
    # A client subscribed to the topic it publishes to gets its PUBACK before the copy of its message from our
    # broker: the acknowledgement of a client's packet is kept ahead of what that packet caused. The
    # specification sets no order between the two, and mosquitto 2.0.11 sends the copy first, so there only
    # both are required.
    topic = unique("self")
    client = raw_factory(broker)
    client.connect_ok("self-" + topic.split("/")[-1])
    assert client.subscribe([(topic, 1)]) == [1]
    client.send(raw.publish(topic, b"mine", 1, 5))
    first, second = client.recv(), client.recv()
    kinds = [(p.ptype, p.pid) for p in (first, second)]
    if broker_kind == "mqttchat":
        assert first.ptype == raw.PUBACK and first.pid == 5, f"first packet was {first!r}"
        assert second.ptype == raw.PUBLISH and second.payload == b"mine"
    else:
        assert sorted(p.ptype for p in (first, second)) == [raw.PUBLISH, raw.PUBACK], kinds
    client.send(raw.puback((second if second.ptype == raw.PUBLISH else first).pid))
    client.expect_nothing(0.3)


def test_own_qos2_acknowledgement_comes_before_own_message(broker, raw_factory):
    # At QoS 2 the PUBREC comes first from both brokers (mosquitto forwards at PUBREL, ours at PUBLISH but
    # behind the PUBREC); after PUBREL the copy and the PUBCOMP arrive, in either order.
    topic = unique("self")
    client = raw_factory(broker)
    client.connect_ok("self2-" + topic.split("/")[-1])
    assert client.subscribe([(topic, 2)]) == [2]
    client.send(raw.publish(topic, b"mine", 2, 5))
    first = client.recv()
    assert first.ptype == raw.PUBREC and first.pid == 5, f"first packet was {first!r}"
    client.send(raw.pubrel(5))
    rest = [client.recv(), client.recv()]
    assert sorted(p.ptype for p in rest) == [raw.PUBLISH, raw.PUBCOMP], rest
    assert next(p for p in rest if p.ptype == raw.PUBLISH).payload == b"mine"
