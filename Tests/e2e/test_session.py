"""Persistent sessions: MQTT 3.1.1 sections 3.1.2.4, 4.1, 4.4."""

import mqtt_raw as raw
from conftest import unique


def _cid(tag: str) -> str:
    return tag + "-" + unique("x").split("/")[1]


def _complete_qos2_publish(pub, topic, payload, pid):
    pub.send(raw.publish(topic, payload, 2, pid))
    assert pub.expect(raw.PUBREC).pid == pid
    pub.send(raw.pubrel(pid))
    assert pub.expect(raw.PUBCOMP).pid == pid


def test_subscriptions_survive_disconnect(broker, raw_factory):
    # MQTT-3.1.2-4: the session (with its subscriptions) is resumed on CleanSession=0.
    cid, topic = _cid("keep-subs"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is True
    pub = raw_factory(broker)
    pub.connect_ok(_cid("keep-subs-p"))
    pub.publish_qos1(topic, b"still subscribed", pid=1)
    p = c.next_publish()
    assert (p.payload, p.qos) == (b"still subscribed", 1)


def test_offline_qos1_and_qos2_delivered_on_reconnect(broker, raw_factory):
    # MQTT-3.1.2-5: QoS 1 and 2 messages arriving while the client is offline are stored and
    # delivered when the session resumes, in order (4.6).
    cid, topic = _cid("offline"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 2)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    pub = raw_factory(broker)
    pub.connect_ok(_cid("offline-p"))
    pub.publish_qos1(topic, b"one", pid=1)
    _complete_qos2_publish(pub, topic, b"two", 2)
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is True
    first = c.next_publish()
    assert (first.payload, first.qos) == (b"one", 1)
    c.send(raw.puback(first.pid))
    second = c.next_publish()
    assert (second.payload, second.qos) == (b"two", 2)
    c.send(raw.pubrec(second.pid))
    assert c.expect(raw.PUBREL).pid == second.pid
    c.send(raw.pubcomp(second.pid))
    c.expect_nothing(0.5)


def test_offline_qos0_not_delivered(broker, raw_factory):
    # 3.1.2.4: storing QoS 0 messages for an offline client is optional (MAY); mosquitto's default
    # and mqttchat both drop them. A QoS 1 message sent afterwards proves the session was resumed.
    cid, topic = _cid("offline0"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    pub = raw_factory(broker)
    pub.connect_ok(_cid("offline0-p"))
    pub.send(raw.publish(topic, b"qos0 while away", 0))
    pub.publish_qos1(topic, b"qos1 while away", pid=1)
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    p = c.next_publish()
    assert p.payload == b"qos1 while away"
    c.send(raw.puback(p.pid))
    c.expect_nothing(0.5)


def test_max_queued_messages_bound(start_broker, raw_factory):
    # The spec leaves the bound to the server (4.1: "the Server MAY ... limit"). With
    # max_queued_messages 3 and 10 messages published while offline, at most 3 come back, they are
    # a subsequence of what was published in order, and none is invented.
    broker = start_broker(max_queued_messages=3, max_inflight_messages=20)
    cid, topic = _cid("bound"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    pub = raw_factory(broker)
    pub.connect_ok(_cid("bound-p"))
    sent = [f"m{i}".encode() for i in range(10)]
    for i, payload in enumerate(sent):
        pub.publish_qos1(topic, payload, pid=i + 1)
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    got = []
    for pkt in c.drain(0.8):
        assert pkt.ptype == raw.PUBLISH, pkt
        got.append(pkt.payload)
        c.send(raw.puback(pkt.pid))
    got += [p.payload for p in c.drain(0.5)]
    print("delivered from the offline queue:", got)
    assert 1 <= len(got) <= 3, got
    positions = [sent.index(g) for g in got]
    assert positions == sorted(positions), got
    # The session is healthy afterwards: a new message arrives.
    pub.publish_qos1(topic, b"after", pid=99)
    assert c.next_publish().payload == b"after"


def test_unacked_qos1_resent_with_dup_on_reconnect(broker, raw_factory):
    # MQTT-4.4.0-1: on resuming a session the server re-sends unacknowledged PUBLISH packets with
    # their original packet ids and DUP=1 (MQTT-3.3.1-1).
    cid, topic = _cid("redeliver"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 1)])
    pub = raw_factory(broker)
    pub.connect_ok(_cid("redeliver-p"))
    pub.publish_qos1(topic, b"unacked", pid=1)
    first = c.next_publish()
    assert (first.payload, first.qos, first.dup) == (b"unacked", 1, False)
    c.close()  # no PUBACK
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is True
    again = c.next_publish()
    assert (again.payload, again.qos, again.dup, again.pid) == (b"unacked", 1, True, first.pid)
    c.send(raw.puback(again.pid))
    c.expect_nothing(0.5)


def test_unacked_qos2_publish_resent_with_dup(broker, raw_factory):
    cid, topic = _cid("redeliver2"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 2)])
    pub = raw_factory(broker)
    pub.connect_ok(_cid("redeliver2-p"))
    _complete_qos2_publish(pub, topic, b"q2", 1)
    first = c.next_publish()
    c.close()  # no PUBREC
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    again = c.next_publish()
    assert (again.payload, again.qos, again.dup, again.pid) == (b"q2", 2, True, first.pid)
    c.send(raw.pubrec(again.pid))
    assert c.expect(raw.PUBREL).pid == again.pid
    c.send(raw.pubcomp(again.pid))


def test_pubrel_resent_on_reconnect(broker, raw_factory):
    # MQTT-4.4.0-1: a QoS 2 message in the PUBREC-received state is resumed by re-sending PUBREL
    # (not the PUBLISH).
    cid, topic = _cid("pubrel"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 2)])
    pub = raw_factory(broker)
    pub.connect_ok(_cid("pubrel-p"))
    _complete_qos2_publish(pub, topic, b"q2", 1)
    p = c.next_publish()
    c.send(raw.pubrec(p.pid))
    assert c.expect(raw.PUBREL).pid == p.pid
    c.close()  # no PUBCOMP
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    rel = c.expect(raw.PUBREL)
    assert rel.raw == bytes([0x62, 0x02]) + p.pid.to_bytes(2, "big")
    c.send(raw.pubcomp(p.pid))
    c.expect_nothing(0.5)


def test_clean_session_discards_subscriptions(broker, raw_factory):
    # MQTT-3.1.2-6: CleanSession=1 discards any previous session and its subscriptions.
    cid, topic = _cid("discard"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([(topic, 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=True) is False
    pub = raw_factory(broker)
    pub.connect_ok(_cid("discard-p"))
    pub.publish_qos1(topic, b"nobody", pid=1)
    c.expect_nothing(0.5)


def test_clean_session_not_kept_after_disconnect(broker, raw_factory):
    # MQTT-3.1.2-6: a clean session ends with the connection; messages meanwhile are not kept.
    cid, topic = _cid("cleanend"), unique()
    c = raw_factory(broker)
    c.connect_ok(cid, clean=True)
    c.subscribe([(topic, 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    pub = raw_factory(broker)
    pub.connect_ok(_cid("cleanend-p"))
    pub.publish_qos1(topic, b"lost", pid=1)
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is False
    c.expect_nothing(0.5)


def test_takeover_keeps_persistent_session(broker, raw_factory):
    # MQTT-3.1.4-2 with CleanSession=0: the new connection takes over the existing session.
    cid, topic = _cid("takeover"), unique()
    old = raw_factory(broker)
    old.connect_ok(cid, clean=False)
    old.subscribe([(topic, 1)])
    new = raw_factory(broker)
    assert new.connect_ok(cid, clean=False) is True
    assert old.closed_within(3)
    pub = raw_factory(broker)
    pub.connect_ok(_cid("takeover-p"))
    pub.publish_qos1(topic, b"to the new one", pid=1)
    assert new.next_publish().payload == b"to the new one"


def test_broker_restart_on_same_port(broker, raw_factory):
    # Harness check: the broker can be restarted on the same port with the same config, and clients
    # connect again. Neither broker is configured to persist sessions to disk, so none is present.
    cid = _cid("restart")
    c = raw_factory(broker)
    c.connect_ok(cid, clean=False)
    c.subscribe([("restart/t", 1)])
    port = broker.port
    broker.restart()
    assert broker.port == port
    assert c.closed_within(3)
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is False
