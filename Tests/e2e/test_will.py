"""Will messages: MQTT 3.1.1 sections 3.1.2.5-3.1.2.7, 3.14."""

import time

import mqtt_raw as raw
from conftest import unique


def _watch(broker, raw_factory, topic, qos=2):
    w = raw_factory(broker)
    w.connect_ok("watch-" + topic.split("/")[-1])
    w.subscribe([(topic, qos)])
    return w


def test_will_published_on_close_without_disconnect(broker, raw_factory):
    # MQTT-3.1.2-8: will published when the network connection is closed without DISCONNECT.
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    c = raw_factory(broker)
    c.connect_ok("will-close", will=(topic, b"gone", 0, False))
    c.close()
    p = w.next_publish()
    assert (p.topic, p.payload, p.qos, p.retain) == (topic, b"gone", 0, False)


def test_no_will_after_disconnect(broker, raw_factory):
    # MQTT-3.1.2-10 / MQTT-3.14.4-3: DISCONNECT discards the will.
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    c = raw_factory(broker)
    c.connect_ok("will-disc", will=(topic, b"never", 0, False))
    c.send(raw.DISCONNECT_BYTES)
    assert c.closed_within(3)  # MQTT-3.14.4-1: server closes after DISCONNECT
    w.expect_nothing(1.0)


def test_will_on_keepalive_expiry(broker, raw_factory):
    # 3.1.2.5: the server publishes the will when it closes the connection because the keepalive
    # expired (MQTT-3.1.2-24).
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    c = raw_factory(broker)
    c.connect_ok("will-ka", keepalive=1, will=(topic, b"timeout", 1, False))
    start = time.monotonic()
    # Bound: 1.5 x keepalive plus mosquitto 2.0.11's 5 s keepalive scan period (see test_keepalive.py).
    p = w.next_publish(timeout=1.5 + 7)
    assert p.payload == b"timeout"
    assert time.monotonic() - start >= 0.9
    assert c.closed_within(2)


def test_will_on_protocol_error(broker, raw_factory):
    # 3.1.2.5: the will is published when the server closes the connection because of a protocol error.
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    c = raw_factory(broker)
    c.connect_ok("will-err", will=(topic, b"bad", 0, False))
    c.send(raw.packet(raw.PUBLISH, 0x06, raw.utf8("x")))  # QoS 3: malformed (MQTT-3.3.1-4)
    assert c.closed_within(3)
    assert w.next_publish().payload == b"bad"


def test_will_on_second_connect(broker, raw_factory, departure):
    # A second CONNECT is a protocol violation (MQTT-3.1.0-2); the connection is closed without
    # DISCONNECT, so the will MUST be published (MQTT-3.1.2-8; 3.1.2.5 lists "the Server closes the
    # Network Connection because of a protocol error").
    departure("mosquitto", "mosquitto 2.0.11 closes the connection on a second CONNECT but drops the "
              "will instead of publishing it (MQTT-3.1.2-8, section 3.1.2.5); it does publish it for "
              "other protocol errors")
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    c = raw_factory(broker)
    c.connect_ok("will-err2", will=(topic, b"bad", 0, False))
    c.send(raw.connect("again"))
    assert c.closed_within(3)
    assert w.next_publish(timeout=2).payload == b"bad"


def test_will_qos_and_retain_honoured(broker, raw_factory):
    # MQTT-3.1.2-14..17: will QoS and will retain are used when publishing the will.
    topic = unique("will")
    w = _watch(broker, raw_factory, topic, qos=2)
    c = raw_factory(broker)
    c.connect_ok("will-q2r", will=(topic, b"last", 2, True))
    c.close()
    p = w.next_publish()
    assert (p.payload, p.qos, p.retain) == (b"last", 2, False)  # live subscriber: retain 0
    w.send(raw.pubrec(p.pid))
    w.expect(raw.PUBREL)
    w.send(raw.pubcomp(p.pid))
    late = raw_factory(broker)
    late.connect_ok("will-late")
    late.subscribe([(topic, 1)])
    p = late.next_publish()
    assert (p.payload, p.qos, p.retain) == (b"last", 1, True)  # stored as retained


def test_will_qos1_delivered_at_qos1(broker, raw_factory):
    topic = unique("will")
    w = _watch(broker, raw_factory, topic, qos=2)
    c = raw_factory(broker)
    c.connect_ok("will-q1", will=(topic, b"q1", 1, False))
    c.close()
    p = w.next_publish()
    assert (p.payload, p.qos, p.retain) == (b"q1", 1, False)


def test_no_will_when_takeover_continues_the_session(broker, raw_factory):
    # A client that reconnects to its persistent session has not gone away: the old connection's will is
    # published on takeover only when the session ends with it (either connection asked for a clean session).
    # mosquitto behaves so; a will here would make chat presence flicker offline on every reconnect.
    topic = unique("will")
    cid = "keep-" + topic.split("/")[-1]
    w = _watch(broker, raw_factory, topic)
    old = raw_factory(broker)
    old.connect_ok(cid, clean=False, will=(topic, b"flicker", 0, False))
    new = raw_factory(broker)
    assert new.connect_ok(cid, clean=False)  # session present: it continues
    assert old.closed_within(3)
    w.expect_nothing(1.0)
    # The will of the new connection still works when it goes away for real.
    new.close()
    w.expect_nothing(0.5)  # it registered none


def test_will_on_takeover_that_ends_the_session(broker, raw_factory):
    # The old connection had a persistent session, the new one asks for a clean one: the session ends, so the
    # old will is published.
    topic = unique("will")
    cid = "end-" + topic.split("/")[-1]
    w = _watch(broker, raw_factory, topic)
    old = raw_factory(broker)
    old.connect_ok(cid, clean=False, will=(topic, b"ended", 0, False))
    new = raw_factory(broker)
    assert not new.connect_ok(cid, clean=True)
    assert old.closed_within(3)
    assert w.next_publish().payload == b"ended"


def test_will_on_takeover(broker, raw_factory):
    # MQTT-3.1.4-2: the server disconnects the existing client on takeover. The old connection is
    # closed without a DISCONNECT from that client, so its will is published (MQTT-3.1.2-8: "MUST be
    # published when the Network Connection is subsequently closed unless ... deleted on receipt of
    # a DISCONNECT").
    topic = unique("will")
    w = _watch(broker, raw_factory, topic)
    old = raw_factory(broker)
    old.connect_ok("will-take", will=(topic, b"taken over", 0, False))
    new = raw_factory(broker)
    new.connect_ok("will-take")
    assert old.closed_within(3)
    assert w.next_publish().payload == b"taken over"
    w.expect_nothing(0.5)
