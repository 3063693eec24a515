"""SUBSCRIBE / SUBACK / UNSUBSCRIBE / UNSUBACK: MQTT 3.1.1 sections 3.8-3.11, 4.7."""

import mqtt_raw as raw
from conftest import unique


def test_suback_grants_requested_qos_and_echoes_packet_id(broker, raw_factory):
    # MQTT-3.8.4-2 (same packet id), MQTT-3.8.4-4 / 3.9.3 (one return code per filter, in order).
    c = raw_factory(broker)
    c.connect_ok("sub-grant")
    base = unique()
    c.send(raw.subscribe(0x1234, [(base + "/q0", 0), (base + "/q1", 1), (base + "/q2", 2)]))
    ack = c.expect(raw.SUBACK)
    assert ack.raw == bytes([0x90, 0x05, 0x12, 0x34, 0x00, 0x01, 0x02])


def test_suback_granted_qos_is_min_of_requested_and_max_qos(start_broker, raw_factory):
    # 3.9.3: the server may grant a lower QoS than requested; a client publishing at QoS 2 to a
    # QoS 1 grant receives QoS 1 (MQTT-3.8.4-6).
    broker = start_broker(max_qos=1)
    c = raw_factory(broker)
    c.connect_ok("sub-maxqos")
    topic = unique()
    assert c.subscribe([(topic + "/a", 0), (topic + "/b", 1), (topic + "/c", 2)]) == [0, 1, 1]


def test_unsubscribe_gets_unsuback_and_stops_delivery(broker, raw_factory):
    # MQTT-3.10.4-4/-5: UNSUBACK with the same packet id, and no new deliveries afterwards.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("unsub-s")
    pub.connect_ok("unsub-p")
    topic = unique()
    sub.subscribe([(topic, 0)])
    pub.send(raw.publish(topic, b"before"))
    assert sub.next_publish().payload == b"before"
    sub.send(raw.unsubscribe(0x0A0B, [topic]))
    ack = sub.expect(raw.UNSUBACK)
    assert ack.raw == bytes([0xB0, 0x02, 0x0A, 0x0B])
    pub.send(raw.publish(topic, b"after"))
    pub.publish_qos1(topic, b"after-qos1", pid=7)
    sub.expect_nothing(0.5)


def test_unsubscribe_unknown_filter_still_acked(broker, raw_factory):
    # MQTT-3.10.4-5: UNSUBACK even if no topic filters are matched.
    c = raw_factory(broker)
    c.connect_ok("unsub-unknown")
    c.send(raw.unsubscribe(42, ["never/subscribed/" + unique()]))
    assert c.expect(raw.UNSUBACK).pid == 42


def test_resubscribe_replaces_qos(broker, raw_factory):
    # MQTT-3.8.4-3: an identical filter replaces the existing subscription (one copy, new QoS).
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("resub-s")
    pub.connect_ok("resub-p")
    topic = unique()
    assert sub.subscribe([(topic, 2)], pid=1) == [2]
    assert sub.subscribe([(topic, 0)], pid=2) == [0]
    pub.publish_qos1(topic, b"m", pid=3)
    p = sub.next_publish()
    assert p.qos == 0 and p.payload == b"m"
    sub.expect_nothing(0.5)  # one subscription, not two


def test_overlapping_subscriptions_deliver_at_highest_qos(broker, raw_factory, departure):
    # MQTT-3.3.5-1: the server MUST deliver the message respecting the maximum QoS of all matching
    # subscriptions. It MAY deliver further copies, one per additional matching subscription, each at
    # that subscription's QoS: so assert a copy at QoS 2 and at most one copy per subscription.
    departure("mosquitto", "mosquitto 2.0.11 sends a single copy at the QoS of the most specific "
              "matching filter (here 'x' at QoS 1, not '+' at QoS 2), violating MQTT-3.3.5-1 "
              "(section 3.3.5: deliver respecting the maximum QoS of all matching subscriptions)")
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("overlap-s")
    pub.connect_ok("overlap-p")
    base = unique()
    assert sub.subscribe([(base + "/#", 0), (base + "/+", 2), (base + "/x", 1)]) == [0, 2, 1]
    pub.send(raw.publish(base + "/x", b"one", qos=2, pid=9))
    assert pub.expect(raw.PUBREC).pid == 9
    pub.send(raw.pubrel(9))
    assert pub.expect(raw.PUBCOMP).pid == 9
    copies = []
    for pkt in sub.drain(1.0):
        if pkt.ptype == raw.PUBREL:
            sub.send(raw.pubcomp(pkt.pid))
            continue
        assert pkt.ptype == raw.PUBLISH, pkt
        copies.append(pkt)
        if pkt.qos == 1:
            sub.send(raw.puback(pkt.pid))
        elif pkt.qos == 2:
            sub.send(raw.pubrec(pkt.pid))
    assert 1 <= len(copies) <= 3, copies
    assert all(p.payload == b"one" for p in copies)
    assert max(p.qos for p in copies) == 2, [(p.qos, p.dup) for p in copies]


def test_overlapping_subscriptions_general_filter_has_higher_qos(broker, raw_factory, departure):
    # MQTT-3.3.5-1 again, the other way round: the wildcard filter has the higher QoS.
    departure("mosquitto", "mosquitto 2.0.11 sends a single copy at the QoS of the most specific "
              "matching filter ('a/x' at QoS 0 instead of 'a/#' at QoS 1), violating MQTT-3.3.5-1")
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("overlap2-s")
    pub.connect_ok("overlap2-p")
    base = unique()
    sub.subscribe([(base + "/#", 1), (base + "/x", 0)])
    pub.publish_qos1(base + "/x", b"m", pid=4)
    copies = sub.drain(0.7)
    assert copies and all(p.ptype == raw.PUBLISH for p in copies), copies
    assert max(p.qos for p in copies) == 1, copies


def test_overlapping_subscriptions_deliver_exactly_one_copy(broker, raw_factory):
    # Design choice shared by mosquitto 2.0.11 and mqttchat, within section 3.3.5 (which would also
    # allow one copy per matching subscription): a client gets a message once, however many of its
    # filters match.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("overlap1-s")
    pub.connect_ok("overlap1-p")
    base = unique()
    sub.subscribe([(base + "/#", 1), (base + "/+", 1), (base + "/x", 1)])
    pub.publish_qos1(base + "/x", b"one", pid=2)
    p = sub.next_publish()
    assert p.qos == 1 and p.payload == b"one"
    sub.send(raw.puback(p.pid))
    sub.expect_nothing(0.7)


def test_wildcard_matching(broker, raw_factory):
    # 4.7: '+' matches one level (including an empty one), '#' matches the parent and any depth.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("wild-s")
    pub.connect_ok("wild-p")
    b = unique()
    sub.subscribe([(b + "/sport/+/player1", 0), (b + "/finance/#", 0)])
    cases = {
        b + "/sport/tennis/player1": True,
        b + "/sport//player1": True,
        b + "/sport/tennis/player2": False,
        b + "/sport/tennis/x/player1": False,
        b + "/finance": True,
        b + "/finance/stock/ibm": True,
        b + "/financeX": False,
    }
    for topic in cases:
        pub.send(raw.publish(topic, topic.encode()))
    got = sorted(p.topic for p in sub.drain(0.7))
    assert got == sorted(t for t, match in cases.items() if match)


def test_multiple_filters_in_one_subscribe_each_work(broker, raw_factory):
    # MQTT-3.8.4-4: handled as a sequence of SUBSCRIBEs.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("multi-s")
    pub.connect_ok("multi-p")
    b = unique()
    assert sub.subscribe([(b + "/a", 1), (b + "/b", 0)]) == [1, 0]
    pub.publish_qos1(b + "/a", b"A", pid=1)
    pub.publish_qos1(b + "/b", b"B", pid=2)
    first, second = sub.next_publish(), sub.next_publish()
    assert (first.topic, first.qos) == (b + "/a", 1)
    assert (second.topic, second.qos) == (b + "/b", 0)


# Two spellings of "café": precomposed U+00E9, and "e" + combining acute U+0301. Unicode calls them
# canonically equivalent; MQTT does not: the server MUST NOT normalise topic names or filters when
# matching (MQTT-4.7.3-4), so they are two different topics (mosquitto compares bytes).
CAFE_COMPOSED = "caf\u00e9"
CAFE_DECOMPOSED = "cafe\u0301"


def test_topics_are_matched_by_bytes_not_unicode_equivalence(broker, raw_factory):
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("nfc-sub")
    pub.connect_ok("nfc-pub")
    base = unique()
    assert sub.subscribe([(f"{base}/{CAFE_COMPOSED}", 1)]) == [1]
    pub.publish_qos1(f"{base}/{CAFE_DECOMPOSED}", b"decomposed", pid=1)
    pub.publish_qos1(f"{base}/{CAFE_COMPOSED}", b"composed", pid=2)
    got = sub.next_publish()
    assert (got.topic, got.payload) == (f"{base}/{CAFE_COMPOSED}", b"composed")
    sub.expect_nothing(0.5)


def test_retained_messages_are_keyed_by_bytes_not_unicode_equivalence(broker, raw_factory):
    pub = raw_factory(broker)
    pub.connect_ok("nfc-ret-pub")
    base = unique()
    pub.publish_qos1(f"{base}/{CAFE_COMPOSED}", b"composed", pid=1, retain=True)
    pub.publish_qos1(f"{base}/{CAFE_DECOMPOSED}", b"decomposed", pid=2, retain=True)
    sub = raw_factory(broker)
    sub.connect_ok("nfc-ret-sub")
    assert sub.subscribe([(f"{base}/{CAFE_COMPOSED}", 1)]) == [1]
    got = sub.next_publish()
    assert (got.topic, got.payload, got.retain) == (f"{base}/{CAFE_COMPOSED}", b"composed", True)
    sub.expect_nothing(0.5)


def test_a_topic_published_to_many_times_follows_later_subscription_changes(broker, raw_factory):
    # Routing must reflect the current subscriptions however often a topic was routed before (our broker caches
    # the route of a topic published to repeatedly and must drop it when a subscription changes).
    first, second, pub = raw_factory(broker), raw_factory(broker), raw_factory(broker)
    first.connect_ok("route-first")
    second.connect_ok("route-second")
    pub.connect_ok("route-pub")
    base = unique()
    topic = f"{base}/room"
    assert first.subscribe([(topic, 0)]) == [0]
    for i in range(100):
        pub.send(raw.publish(topic, b"warm-%d" % i))
    for i in range(100):
        assert first.next_publish().payload == b"warm-%d" % i
    # A second subscriber through a wildcard: the next message reaches both.
    assert second.subscribe([(f"{base}/+", 0)]) == [0]
    pub.send(raw.publish(topic, b"after-join"))
    assert first.next_publish().payload == b"after-join"
    assert second.next_publish().payload == b"after-join"
    # The first leaves: only the second receives.
    first.send(raw.unsubscribe(9, [topic]))
    assert first.expect(raw.UNSUBACK).pid == 9
    pub.send(raw.publish(topic, b"after-leave"))
    assert second.next_publish().payload == b"after-leave"
    first.expect_nothing(0.5)
