"""Retained messages: MQTT 3.1.1 section 3.3.1.3."""

import mqtt_raw as raw
from conftest import unique


def test_new_subscriber_gets_retained_with_retain_flag(broker, client_factory):
    # MQTT-3.3.1-5 (stored) and MQTT-3.3.1-8 (RETAIN=1 when sent because of a new subscription).
    pub = client_factory(broker)
    topic = unique()
    pub.publish(topic, b"kept", 1, retain=True)
    sub = client_factory(broker)
    sub.subscribe(topic, 1)
    m = sub.get()
    assert (m.payload, m.retain, m.qos) == (b"kept", True, 1)
    sub.no_message(0.3)


def test_retained_replaced_by_newer(broker, client_factory):
    # MQTT-3.3.1-5: a new retained message replaces the stored one.
    pub = client_factory(broker)
    topic = unique()
    pub.publish(topic, b"old", 1, retain=True)
    pub.publish(topic, b"new", 1, retain=True)
    sub = client_factory(broker)
    sub.subscribe(topic, 1)
    assert sub.get().payload == b"new"
    sub.no_message(0.3)


def test_retained_removed_by_empty_payload(broker, client_factory):
    # MQTT-3.3.1-10 / -11: a zero-byte retained PUBLISH removes the stored message and is not stored.
    pub = client_factory(broker)
    topic = unique()
    pub.publish(topic, b"gone soon", 1, retain=True)
    pub.publish(topic, b"", 1, retain=True)
    sub = client_factory(broker)
    sub.subscribe(topic, 1)
    sub.no_message(0.5)


def test_empty_retained_still_forwarded_to_current_subscribers(broker, client_factory):
    # 3.3.1.3: a zero-byte retained PUBLISH is processed as normal and sent to current subscribers.
    pub, sub = client_factory(broker), client_factory(broker)
    topic = unique()
    sub.subscribe(topic, 0)
    pub.publish(topic, b"", 0, retain=True)
    m = sub.get()
    assert m.payload == b"" and m.retain is False


def test_existing_subscriber_gets_retain_0(broker, client_factory):
    # MQTT-3.3.1-9: RETAIN=0 when forwarded because of an established subscription.
    pub, sub = client_factory(broker), client_factory(broker)
    topic = unique()
    sub.subscribe(topic, 1)
    pub.publish(topic, b"live", 1, retain=True)
    m = sub.get()
    assert (m.payload, m.retain) == (b"live", False)


def test_non_retained_publish_does_not_touch_retained(broker, client_factory):
    # MQTT-3.3.1-12: RETAIN=0 must not store, remove or replace a retained message.
    pub = client_factory(broker)
    topic = unique()
    pub.publish(topic, b"stored", 0, retain=True)
    pub.publish(topic, b"transient", 0, retain=False)
    pub.publish(topic, b"", 0, retain=False)
    sub = client_factory(broker)
    sub.subscribe(topic, 0)
    assert sub.get().payload == b"stored"


def test_retained_delivered_at_min_of_qos_and_granted(broker, raw_factory):
    # MQTT-3.8.4-6 applies to retained messages too.
    pub = raw_factory(broker)
    pub.connect_ok("ret-qos-p")
    b = unique()
    pub.publish_qos1(b + "/one", b"q1", pid=1, retain=True)
    pub.send(raw.publish(b + "/two", b"q2", 2, 2, retain=True))
    pub.expect(raw.PUBREC)
    pub.send(raw.pubrel(2))
    pub.expect(raw.PUBCOMP)
    sub = raw_factory(broker)
    sub.connect_ok("ret-qos-s0")
    sub.subscribe([(b + "/+", 0)])
    got = sorted((p.topic, p.qos, p.retain) for p in (sub.next_publish(), sub.next_publish()))
    assert got == [(b + "/one", 0, True), (b + "/two", 0, True)]
    sub2 = raw_factory(broker)
    sub2.connect_ok("ret-qos-s1")
    sub2.subscribe([(b + "/+", 1)])
    got = sorted((p.topic, p.qos, p.retain) for p in (sub2.next_publish(), sub2.next_publish()))
    assert got == [(b + "/one", 1, True), (b + "/two", 1, True)]


def test_resubscribe_resends_retained(broker, client_factory):
    # MQTT-3.8.4-3: on an identical re-subscription, existing retained messages MUST be re-sent.
    pub = client_factory(broker)
    topic = unique()
    pub.publish(topic, b"r", 0, retain=True)
    sub = client_factory(broker)
    sub.subscribe(topic, 0)
    assert sub.get().retain is True
    sub.subscribe(topic, 1)
    m = sub.get()
    assert (m.payload, m.retain) == (b"r", True)


def test_wildcard_subscription_gets_all_matching_retained(broker, client_factory):
    pub = client_factory(broker)
    b = unique()
    for leaf in ("a", "b", "c/d"):
        pub.publish(f"{b}/{leaf}", leaf.encode(), 0, retain=True)
    sub = client_factory(broker)
    sub.subscribe(b + "/#", 0)
    got = sorted(m.payload for m in sub.get_n(3))
    assert got == [b"a", b"b", b"c/d"]
