"""PUBLISH and the QoS 0/1/2 flows: MQTT 3.1.1 sections 3.3-3.7, 4.3, 4.6."""

import time

import mqtt_raw as raw
from conftest import unique


def test_paho_round_trip_each_qos(broker, client_factory):
    sub, pub = client_factory(broker), client_factory(broker)
    topic = unique()
    assert sub.subscribe(topic, 2) == 2
    for qos in (0, 1, 2):
        pub.publish(topic, f"q{qos}".encode(), qos)
        m = sub.get()
        assert (m.payload, m.qos, m.retain) == (f"q{qos}".encode(), qos, False)


def test_outbound_qos_is_min_of_publish_and_granted(broker, raw_factory):
    # MQTT-3.8.4-6 / 3.3.5: delivered QoS = min(published QoS, granted QoS).
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("minqos-s")
    pub.connect_ok("minqos-p")
    b = unique()
    sub.subscribe([(b + "/g0", 0), (b + "/g1", 1), (b + "/g2", 2)])
    pid = 1
    expected = []
    for granted in (0, 1, 2):
        for pq in (0, 1, 2):
            topic = f"{b}/g{granted}"
            payload = f"{granted}{pq}".encode()
            pub.send(raw.publish(topic, payload, pq, pid))
            if pq == 1:
                assert pub.expect(raw.PUBACK).pid == pid
            elif pq == 2:
                assert pub.expect(raw.PUBREC).pid == pid
                pub.send(raw.pubrel(pid))
                assert pub.expect(raw.PUBCOMP).pid == pid
            pid += 1
            expected.append((payload, min(granted, pq)))
    got = []
    while len(got) < len(expected):
        p = sub.recv()
        if p.ptype == raw.PUBREL:
            sub.send(raw.pubcomp(p.pid))
            continue
        assert p.ptype == raw.PUBLISH, p
        got.append((p.payload, p.qos))
        if p.qos == 1:
            sub.send(raw.puback(p.pid))
        elif p.qos == 2:
            sub.send(raw.pubrec(p.pid))
    assert got == expected


def test_qos1_puback_carries_packet_id(broker, raw_factory):
    # MQTT-4.3.2-2 / 3.4: PUBACK with the PUBLISH's packet identifier.
    c = raw_factory(broker)
    c.connect_ok("puback-id")
    c.send(raw.publish(unique(), b"x", 1, 0xBEEF))
    assert c.expect(raw.PUBACK).raw == bytes([0x40, 0x02, 0xBE, 0xEF])


def test_qos2_inbound_flow_and_pubcomp(broker, raw_factory):
    # 4.3.3: PUBLISH -> PUBREC(id); PUBREL(id) -> PUBCOMP(id), exact bytes.
    c = raw_factory(broker)
    c.connect_ok("qos2-in")
    c.send(raw.publish(unique(), b"x", 2, 0x0102))
    assert c.expect(raw.PUBREC).raw == bytes([0x50, 0x02, 0x01, 0x02])
    c.send(raw.pubrel(0x0102))
    assert c.expect(raw.PUBCOMP).raw == bytes([0x70, 0x02, 0x01, 0x02])


def test_pubrel_for_unknown_id_still_gets_pubcomp(broker, raw_factory):
    # MQTT-4.3.3-2 / 4.4: the receiver answers PUBREL with PUBCOMP even if it has no state for the id
    # (it may be a retransmission after the first PUBCOMP was lost).
    c = raw_factory(broker)
    c.connect_ok("pubrel-unknown")
    c.send(raw.pubrel(777))
    assert c.expect(raw.PUBCOMP).pid == 777


def _finish_qos2_delivery(sub) -> bytes:
    p = sub.next_publish()
    assert p.qos == 2
    sub.send(raw.pubrec(p.pid))
    assert sub.expect(raw.PUBREL).pid == p.pid
    sub.send(raw.pubcomp(p.pid))
    return p.payload


def test_qos2_exactly_once_despite_dup_retransmission(broker, raw_factory):
    # MQTT-4.3.3-2: until PUBREL, a PUBLISH with the same id (DUP=1) is acknowledged with PUBREC and
    # must not cause a second onward delivery; after PUBREL, the same id starts a new message.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("eo-s")
    pub.connect_ok("eo-p")
    topic = unique()
    sub.subscribe([(topic, 2)])
    pub.send(raw.publish(topic, b"once", 2, 5))
    assert pub.expect(raw.PUBREC).pid == 5
    pub.send(raw.publish(topic, b"once", 2, 5, dup=True))
    assert pub.expect(raw.PUBREC).pid == 5
    pub.send(raw.pubrel(5))
    assert pub.expect(raw.PUBCOMP).pid == 5
    assert _finish_qos2_delivery(sub) == b"once"
    sub.expect_nothing(0.7)
    # The id is free again: same id, new message.
    pub.send(raw.publish(topic, b"second", 2, 5))
    assert pub.expect(raw.PUBREC).pid == 5
    pub.send(raw.pubrel(5))
    assert pub.expect(raw.PUBCOMP).pid == 5
    assert _finish_qos2_delivery(sub) == b"second"


def test_qos2_every_retransmission_before_pubrel_gets_pubrec(broker, raw_factory, departure):
    # MQTT-4.3.3-2: "Until it has received the corresponding PUBREL packet, the Receiver MUST
    # acknowledge ANY subsequent PUBLISH packet with the same Packet Identifier by sending a PUBREC."
    departure("mosquitto", "mosquitto 2.0.11 answers the first DUP retransmission with PUBREC but "
              "closes the connection ('protocol error') on the second one, violating MQTT-4.3.3-2 "
              "(section 4.3.3)")
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("eo3-s")
    pub.connect_ok("eo3-p")
    topic = unique()
    sub.subscribe([(topic, 2)])
    pub.send(raw.publish(topic, b"once", 2, 6))
    assert pub.expect(raw.PUBREC).pid == 6
    for _ in range(3):
        pub.send(raw.publish(topic, b"once", 2, 6, dup=True))
        assert pub.expect(raw.PUBREC).pid == 6
    pub.send(raw.pubrel(6))
    assert pub.expect(raw.PUBCOMP).pid == 6
    assert _finish_qos2_delivery(sub) == b"once"
    sub.expect_nothing(0.7)


def test_qos2_retransmission_after_reconnect_delivered_once(broker, raw_factory):
    # MQTT-4.4.0-1 with MQTT-4.3.3-2: a client resuming its session re-sends the unacknowledged QoS 2
    # PUBLISH (DUP=1, same id); the server answers PUBREC and delivers the message once.
    sub = raw_factory(broker)
    sub.connect_ok("eo2-s")
    topic = unique()
    sub.subscribe([(topic, 2)])
    pub = raw_factory(broker)
    pub.connect_ok("eo2-p", clean=False)
    pub.send(raw.publish(topic, b"again", 2, 9))
    assert pub.expect(raw.PUBREC).pid == 9
    pub.close()
    pub = raw_factory(broker)
    assert pub.connect_ok("eo2-p", clean=False) is True
    pub.send(raw.publish(topic, b"again", 2, 9, dup=True))
    assert pub.expect(raw.PUBREC).pid == 9
    pub.send(raw.pubrel(9))
    assert pub.expect(raw.PUBCOMP).pid == 9
    assert _finish_qos2_delivery(sub) == b"again"
    sub.expect_nothing(0.7)


def test_qos2_outbound_handshake(broker, raw_factory):
    # 4.3.3 server as sender: PUBLISH(qos2) -> PUBREC -> PUBREL(flags 0x2) -> PUBCOMP.
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("q2out-s")
    pub.connect_ok("q2out-p")
    topic = unique()
    sub.subscribe([(topic, 2)])
    pub.send(raw.publish(topic, b"m", 2, 1))
    pub.expect(raw.PUBREC)
    pub.send(raw.pubrel(1))
    pub.expect(raw.PUBCOMP)
    p = sub.next_publish()
    assert p.qos == 2 and not p.dup and p.pid != 0
    sub.send(raw.pubrec(p.pid))
    rel = sub.expect(raw.PUBREL)
    assert rel.raw == bytes([0x62, 0x02]) + p.pid.to_bytes(2, "big")
    sub.send(raw.pubcomp(p.pid))
    sub.expect_nothing(0.5)


def test_qos1_outbound_uses_nonzero_packet_id(broker, raw_factory):
    # MQTT-2.3.1-1: QoS>0 PUBLISH carries a non-zero packet identifier; MQTT-3.3.1-3 retain=0 and
    # DUP=0 on a first delivery (MQTT-3.3.1-1).
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("q1out-s")
    pub.connect_ok("q1out-p")
    topic = unique()
    sub.subscribe([(topic, 1)])
    for i in range(3):
        pub.publish_qos1(topic, str(i).encode(), pid=i + 1)
    ids = set()
    for i in range(3):
        p = sub.next_publish()
        assert p.qos == 1 and p.pid != 0 and not p.dup and not p.retain
        ids.add(p.pid)
    # MQTT-2.3.1-2: ids of messages in flight at the same time are distinct.
    assert len(ids) == 3


def test_inflight_window_with_queue_delivers_all_in_order(start_broker, raw_factory):
    # 4.6 ordering + max_inflight_messages: with a window of 2 and a subscriber that does not ack,
    # only 2 are in flight; acking releases the queued ones, all delivered in publish order.
    broker = start_broker(max_inflight_messages=2, max_queued_messages=100)
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("win-s")
    pub.connect_ok("win-p")
    topic = unique()
    sub.subscribe([(topic, 1)])
    n = 10
    for i in range(n):
        pub.publish_qos1(topic, str(i).encode(), pid=i + 1)
    first = [sub.next_publish(), sub.next_publish()]
    sub.expect_nothing(0.5)  # window full
    got = [p.payload for p in first]
    pending = [p.pid for p in first]
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        sub.send(raw.puback(pending.pop(0)))
        p = sub.next_publish()
        got.append(p.payload)
        pending.append(p.pid)
    assert got == [str(i).encode() for i in range(n)]


def test_many_messages_keep_per_topic_order(broker, client_factory):
    # 4.6: messages on one topic at the same QoS arrive in the order they were published.
    sub, pub = client_factory(broker), client_factory(broker)
    topic = unique()
    sub.subscribe(topic, 1)
    n = 200
    for i in range(n):
        pub.c.publish(topic, str(i), 1)
    pub.publish(topic, "end", 1)
    got = [m.payload.decode() for m in sub.get_n(n + 1, timeout=10)]
    assert got == [str(i) for i in range(n)] + ["end"]


def test_qos0_order_and_completeness(broker, client_factory):
    sub, pub = client_factory(broker), client_factory(broker)
    topic = unique()
    sub.subscribe(topic, 0)
    for i in range(100):
        pub.c.publish(topic, str(i), 0)
    got = [m.payload.decode() for m in sub.get_n(100, timeout=10)]
    assert got == [str(i) for i in range(100)]


def test_publisher_receives_own_message_when_subscribed(broker, raw_factory):
    # 3.3: MQTT 3.1.1 has no "no local": a client subscribed to its own topic gets its messages.
    c = raw_factory(broker)
    c.connect_ok("self-echo")
    topic = unique()
    c.subscribe([(topic, 0)])
    c.send(raw.publish(topic, b"me"))
    assert c.next_publish().payload == b"me"


def test_empty_payload_and_binary_payload(broker, raw_factory):
    sub, pub = raw_factory(broker), raw_factory(broker)
    sub.connect_ok("bin-s")
    pub.connect_ok("bin-p")
    topic = unique()
    sub.subscribe([(topic, 0)])
    blob = bytes(range(256)) * 40
    pub.send(raw.publish(topic, b""))
    pub.send(raw.publish(topic, blob))
    assert sub.next_publish().payload == b""
    assert sub.next_publish().payload == blob


def test_pingreq_gets_pingresp(broker, raw_factory):
    # MQTT-3.12.4-1.
    c = raw_factory(broker)
    c.connect_ok("pinger")
    c.send(raw.PINGREQ_BYTES)
    assert c.expect(raw.PINGRESP).raw == bytes([0xD0, 0x00])
