"""MQTT 5.0 wills: Will Delay Interval (3.1.3.2.2), will properties (3.1.3.2), DISCONNECT 0x04 (3.14.2.1), and wills
between MQTT 3.1.1 and 5 clients."""

import time

import mqtt5_raw as m5
import mqtt_raw
from mqtt5_client import cid
from conftest import unique

WILL_PROPS = [
    (m5.PAYLOAD_FORMAT_INDICATOR, 1),
    (m5.MESSAGE_EXPIRY_INTERVAL, 120),
    (m5.CONTENT_TYPE, "text/plain"),
    (m5.RESPONSE_TOPIC, "will/reply"),
    (m5.CORRELATION_DATA, b"\x07will"),
    (m5.USER_PROPERTY, ("state", "offline")),
    (m5.USER_PROPERTY, ("state", "really")),
]
FORWARDED = {m5.PAYLOAD_FORMAT_INDICATOR, m5.CONTENT_TYPE, m5.RESPONSE_TOPIC, m5.CORRELATION_DATA, m5.USER_PROPERTY}


def _watch(broker, raw5_factory, topic):
    w = raw5_factory(broker)
    w.connect_ok(cid("watch"))
    w.subscribe([(topic, 1)])
    return w


def test_will_properties_forwarded(broker, raw5_factory):
    # [MQTT-3.1.3-...] 3.1.3.2: the will's properties are sent with it as PUBLISH properties, unaltered; its Message
    # Expiry Interval counts down as for any message.
    topic = unique("will")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("w"), will=(topic, b"gone", 1, False), will_props=WILL_PROPS)
    c.close()
    got = w.next_publish()
    assert (got.topic, got.payload, got.qos) == (topic, b"gone", 1)
    assert [(k, v) for k, v in got.props if k in FORWARDED] == [p for p in WILL_PROPS if p[0] in FORWARDED], got
    assert 110 <= got.props.get(m5.MESSAGE_EXPIRY_INTERVAL, -1) <= 120, got


def test_will_properties_through_paho(broker, client5_factory):
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    topic = unique("will")
    watcher = client5_factory(broker)
    assert watcher.subscribe(topic, 1) == 1
    props = Properties(PacketTypes.WILLMESSAGE)
    props.UserProperty = [("a", "2"), ("c", "3")]
    props.ContentType = "text/plain"
    dying = client5_factory(broker, connect=False)
    dying.will_set(topic, b"paho will", 1, properties=props)
    dying.connect()
    dying.c._sock_close()  # drop the socket without DISCONNECT
    m = watcher.get()
    assert m.payload == b"paho will"
    assert m.properties.UserProperty == [("a", "2"), ("c", "3")] and m.properties.ContentType == "text/plain"


def test_will_after_the_delay(broker, raw5_factory):
    # 3.1.3.2.2: the will is published once the Will Delay Interval has passed (session longer than the delay).
    topic = unique("wd")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("wd"), props={m5.SESSION_EXPIRY_INTERVAL: 60}, will=(topic, b"late", 1, False),
                 will_props={m5.WILL_DELAY_INTERVAL: 2})
    c.close()
    start = time.monotonic()
    w.expect_nothing(1.5)
    got = w.next_publish(timeout=4.5)  # mosquitto 2.0.11 publishes it ~0.5 s after the delay
    assert got.payload == b"late"
    assert time.monotonic() - start >= 1.9


def test_no_will_when_the_session_resumes_in_time(broker, raw5_factory):
    # [MQTT-3.1.3-9]: a new connection with the same ClientID before the delay has passed cancels the will.
    topic, client_id = unique("wd"), cid("wd")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(client_id, props={m5.SESSION_EXPIRY_INTERVAL: 60}, will=(topic, b"never", 1, False),
                 will_props={m5.WILL_DELAY_INTERVAL: 3})
    c.close()
    time.sleep(0.5)
    back = raw5_factory(broker)
    assert back.connect_ok(client_id, clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60}).session_present
    w.expect_nothing(4.5)


def test_will_when_the_session_ends_before_the_delay(broker, raw5_factory):
    # 3.1.3.2.2: the will is published when the delay passes or the session ends, whichever is first.
    topic = unique("wd")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("wd"), props={m5.SESSION_EXPIRY_INTERVAL: 1}, will=(topic, b"session over", 1, False),
                 will_props={m5.WILL_DELAY_INTERVAL: 60})
    c.close()
    assert w.next_publish(timeout=5).payload == b"session over"


def test_will_delay_with_session_ending_at_the_close(broker, raw5_factory, departure):
    # 3.1.3.2.2: with Session Expiry Interval 0 the session ends when the connection closes, so the will is published
    # then, whatever the Will Delay Interval (paho.mqtt.testing's client_test5 test_will_delay checks the same).
    departure("mosquitto", "MQTT 5.0 §3.1.3.2.2: with Session Expiry 0, mosquitto 2.0.11 waits for the Will Delay "
              "Interval although the session ended with the connection")
    topic = unique("wd")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("wd"), will=(topic, b"session over", 1, False), will_props={m5.WILL_DELAY_INTERVAL: 5})
    c.close()
    assert w.next_publish(timeout=2).payload == b"session over"


def test_will_delay_zero_publishes_at_once(broker, raw5_factory):
    topic = unique("wd0")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("wd0"), props={m5.SESSION_EXPIRY_INTERVAL: 60}, will=(topic, b"now", 0, False))
    c.close()
    assert w.next_publish(timeout=1.5).payload == b"now"


def test_disconnect_with_will_message(broker, raw5_factory):
    # 3.14.2.1: DISCONNECT with 0x04 (Disconnect with Will Message) asks for the will to be published.
    topic = unique("w04")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("w04"), will=(topic, b"asked for", 1, False))
    c.send(m5.disconnect(m5.DISCONNECT_WITH_WILL))
    assert c.closed_within(3)
    assert w.next_publish().payload == b"asked for"


def test_normal_disconnect_discards_the_will(broker, raw5_factory):
    # [MQTT-3.1.2-10] / 3.14.4: DISCONNECT with 0x00 deletes the will.
    topic = unique("w00")
    w = _watch(broker, raw5_factory, topic)
    c = raw5_factory(broker)
    c.connect_ok(cid("w00"), will=(topic, b"never", 1, False))
    c.send(m5.disconnect(m5.SUCCESS))
    assert c.closed_within(3)
    w.expect_nothing(1.0)


def test_will_retained_with_properties(broker, raw5_factory):
    topic = unique("wr")
    c = raw5_factory(broker)
    c.connect_ok(cid("wr"), will=(topic, b"last words", 1, True), will_props=[(m5.USER_PROPERTY, ("k", "v"))])
    c.close()
    time.sleep(0.5)
    late = raw5_factory(broker)
    late.connect_ok(cid("late"))
    late.subscribe([(topic, 1)])
    got = late.next_publish()
    assert (got.payload, got.retain, got.props.user) == (b"last words", True, [("k", "v")])
    late.publish(topic, b"", 0, retain=True)


def test_v5_will_to_v311_subscriber(broker, raw5_factory, raw_factory):
    topic = unique("wmix")
    old = raw_factory(broker)
    old.connect_ok(cid("v311"))
    old.subscribe([(topic, 1)])
    c = raw5_factory(broker)
    c.connect_ok(cid("v5"), will=(topic, b"v5 will", 1, False), will_props=WILL_PROPS)
    c.close()
    got = old.next_publish()
    assert (got.topic, got.payload, got.qos) == (topic, b"v5 will", 1)  # no property block in the payload


def test_v311_will_to_v5_subscriber(broker, raw5_factory, raw_factory):
    topic = unique("wmix")
    w = _watch(broker, raw5_factory, topic)
    old = raw_factory(broker)
    old.connect_ok(cid("v311"), will=(topic, b"3.1.1 will", 1, False))
    old.close()
    got = w.next_publish()
    assert (got.topic, got.payload) == (topic, b"3.1.1 will")
    assert [k for k, _ in got.props] == [], got
