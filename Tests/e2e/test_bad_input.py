"""Malformed and hostile input (MQTT 3.1.1 sections 2, 3, 4.8): the offending connection is closed and
nobody else is affected. Every test checks that a bystander client connected at the same time
still publishes and receives afterwards, and that the broker process is alive."""

import struct

import pytest

import mqtt_raw as raw
from conftest import unique


class Bystander:
    def __init__(self, broker, client_factory):
        self.broker = broker
        self.c = client_factory(broker)
        self.topic = unique("bystander")
        self.c.subscribe(self.topic, 1)
        self.n = 0
        self.check()

    def check(self):
        self.n += 1
        payload = f"still here {self.n}".encode()
        self.c.publish(self.topic, payload, 1)
        m = self.c.get()
        assert m.payload == payload
        assert self.broker.alive(), "broker process died"


@pytest.fixture
def bystander(broker, client_factory):
    return Bystander(broker, client_factory)


def _offender(broker, raw_factory, cid):
    c = raw_factory(broker)
    c.connect_ok(cid)
    return c


BAD_PACKETS = {
    # MQTT-2.2.2-2: reserved flags of SUBSCRIBE must be 0010.
    "subscribe_reserved_flags": raw.packet(raw.SUBSCRIBE, 0x00, struct.pack("!H", 1) + raw.utf8("a/b") + b"\x00"),
    # MQTT-2.2.2-2: PUBREL flags must be 0010.
    "pubrel_reserved_flags": raw.packet(raw.PUBREL, 0x00, struct.pack("!H", 1)),
    # MQTT-2.2.2-2: PINGREQ flags must be 0.
    "pingreq_reserved_flags": bytes([0xC1, 0x00]),
    # MQTT-2.2.2-2: UNSUBSCRIBE flags must be 0010.
    "unsubscribe_reserved_flags": raw.packet(raw.UNSUBSCRIBE, 0x00, struct.pack("!H", 1) + raw.utf8("a")),
    # MQTT-2.2.2-2: PUBACK flags must be 0.
    "puback_reserved_flags": raw.packet(raw.PUBACK, 0x01, struct.pack("!H", 1)),
    # MQTT-2.2.2-2: DISCONNECT flags must be 0.
    "disconnect_reserved_flags": bytes([0xE1, 0x00]),
    # 3.12.1 / 2.2.3: PINGREQ has no remaining bytes.
    "pingreq_with_body": bytes([0xC0, 0x01, 0x00]),
    # 2.2.3: remaining length uses at most 4 bytes; a fifth continuation byte is malformed.
    "remaining_length_5_bytes": bytes([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    # MQTT-1.5.3-1: ill-formed UTF-8 in a topic name.
    "invalid_utf8_topic": raw.publish(b"bad/\xff\xfe", b"x"),
    # MQTT-1.5.3-2: U+0000 in a topic name.
    "nul_in_topic": raw.publish(b"bad/\x00/nul", b"x"),
    # MQTT-3.3.2-2: no wildcards in a PUBLISH topic name.
    "wildcard_plus_in_publish": raw.publish("bad/+/topic", b"x"),
    "wildcard_hash_in_publish": raw.publish("bad/#", b"x"),
    # MQTT-2.3.1-1: QoS > 0 PUBLISH needs a non-zero packet id.
    "publish_packet_id_0": raw.publish("bad/pid0", b"x", qos=1, pid=0),
    # MQTT-2.3.1-1 for SUBSCRIBE.
    "subscribe_packet_id_0": raw.packet(raw.SUBSCRIBE, 0x02, struct.pack("!H", 0) + raw.utf8("a") + b"\x00"),
    # MQTT-3.3.1-4: QoS 3.
    "publish_qos_3": raw.packet(raw.PUBLISH, 0x06, raw.utf8("bad/qos3") + struct.pack("!H", 1) + b"x"),
    # MQTT-3.8.3-3: SUBSCRIBE with no topic filter.
    "subscribe_no_filters": raw.packet(raw.SUBSCRIBE, 0x02, struct.pack("!H", 1)),
    # MQTT-3.10.3-2: UNSUBSCRIBE with no topic filter.
    "unsubscribe_no_filters": raw.packet(raw.UNSUBSCRIBE, 0x02, struct.pack("!H", 1)),
    # MQTT-3.8.3-4: requested QoS 3 in SUBSCRIBE.
    "subscribe_qos_3": raw.packet(raw.SUBSCRIBE, 0x02, struct.pack("!H", 1) + raw.utf8("a") + b"\x03"),
    # 4.7.1: '#' must be last and alone in its level.
    "subscribe_bad_hash_filter": raw.subscribe(1, [("a/#/b", 0)]),
    # Packet type 0 and 15 are reserved (2.2.1).
    "reserved_packet_type_0": bytes([0x00, 0x00]),
    "reserved_packet_type_15": bytes([0xF0, 0x00]),
    # A CONNACK sent by a client (server-to-client packet).
    "connack_from_client": bytes([0x20, 0x02, 0x00, 0x00]),
    # A topic length that runs past the end of the packet.
    "truncated_topic_length": raw.packet(raw.PUBLISH, 0x00, struct.pack("!H", 50) + b"short"),
}


# Cases where mosquitto 2.0.11 keeps the connection open although the spec says to close it.
MOSQUITTO_ACCEPTS = {
    "pingreq_reserved_flags": "mosquitto 2.0.11 answers a PINGREQ with flags 0001 with PINGRESP instead "
                              "of closing (MQTT-2.2.2-2, section 2.2.2: invalid flags -> close)",
    "puback_reserved_flags": "mosquitto 2.0.11 ignores the flags of PUBACK and keeps the connection "
                             "(MQTT-2.2.2-2, section 2.2.2: invalid flags -> close)",
    "pingreq_with_body": "mosquitto 2.0.11 answers a PINGREQ with remaining length 1 with PINGRESP; "
                         "a PINGREQ has no variable header or payload (section 3.12), a malformed "
                         "packet is a protocol violation that closes the connection (MQTT-4.8.0-1)",
}


@pytest.mark.parametrize("case", list(BAD_PACKETS))
def test_malformed_packet_closes_only_that_connection(broker, raw_factory, bystander, case, departure):
    if case in MOSQUITTO_ACCEPTS:
        departure("mosquitto", MOSQUITTO_ACCEPTS[case])
    c = _offender(broker, raw_factory, "bad-" + case.replace("_", "-")[:40])
    c.send(BAD_PACKETS[case])
    assert c.closed_within(3), f"{case}: connection not closed"
    bystander.check()


def test_malformed_publish_is_not_delivered(broker, raw_factory, bystander):
    # A rejected PUBLISH (wildcard topic) must not reach subscribers of a matching filter.
    watcher = raw_factory(broker)
    watcher.connect_ok("bad-watch")
    watcher.subscribe([("evil/#", 0)])
    c = _offender(broker, raw_factory, "bad-evil")
    c.send(raw.publish("evil/+", b"nope"))
    assert c.closed_within(3)
    watcher.expect_nothing(0.5)
    bystander.check()


def test_oversized_packet_closes_connection(start_broker, raw_factory, client_factory):
    # 4.8 / mosquitto's max_packet_size: a packet over the configured limit closes the connection;
    # smaller packets still pass.
    broker = start_broker(max_packet_size=1000)
    by = Bystander(broker, client_factory)
    sub = raw_factory(broker)
    sub.connect_ok("big-sub")
    topic = unique("big")
    sub.subscribe([(topic, 0)])
    c = _offender(broker, raw_factory, "big-pub")
    c.send(raw.publish(topic, b"s" * 500))
    assert sub.next_publish().payload == b"s" * 500
    c.send(raw.publish(topic, b"L" * 5000))
    assert c.closed_within(3)
    sub.expect_nothing(0.5)
    by.check()


def test_huge_declared_length_does_not_hurt_others(broker, raw_factory, bystander):
    # A client declares a ~256 MB packet and then trickles a few bytes: the broker must not stall.
    c = _offender(broker, raw_factory, "bad-huge")
    c.send(bytes([0x30, 0xFF, 0xFF, 0xFF, 0x7F]) + raw.utf8("x") + b"abc")
    bystander.check()
    c.close()
    bystander.check()


def test_garbage_before_connect_closes(broker, raw_factory, bystander):
    c = raw_factory(broker)
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.closed_within(3)
    bystander.check()


def test_bad_protocol_name_closes(broker, raw_factory, bystander):
    # MQTT-3.1.2-1: an unknown protocol name -> the server MAY disconnect without CONNACK.
    c = raw_factory(broker)
    c.send(raw.connect("bad-name", proto_name="HTTP", level=4))
    assert c.closed_within(3)
    bystander.check()


def test_connect_reserved_flag_set_closes(broker, raw_factory, bystander):
    # MQTT-3.1.2-3: the reserved bit 0 of the connect flags must be 0, else disconnect.
    body = raw.utf8("MQTT") + bytes([4, 0x03]) + struct.pack("!H", 60) + raw.utf8("reserved-flag")
    c = raw_factory(broker)
    c.send(raw.packet(raw.CONNECT, 0, body))
    assert c.closed_within(3)
    bystander.check()


def test_silent_connection_closed_and_others_unaffected(broker, raw_factory, bystander, departure):
    # Section 3.1.4 item 1: a server SHOULD close a connection that sends no CONNECT within a
    # reasonable time (ours: connect_timeout 2), including one that sent only part of a CONNECT.
    departure("mosquitto", "mosquitto 2.0.11 has no CONNECT timeout: a TCP connection that sends "
              "nothing stays open (observed still open after 75 s); MQTT 3.1.1 section 3.1.4 item 1 "
              "says the server SHOULD close it")
    c = raw_factory(broker)
    half = raw_factory(broker)
    half.send(raw.connect("half-open")[:5])  # a partial CONNECT, then silence
    bystander.check()
    assert c.closed_within(5)
    assert half.closed_within(2)
    bystander.check()


def test_many_connections_opened_and_dropped(broker, raw_factory, bystander):
    # Abrupt closes mid-packet must not leak into other sessions.
    for i in range(30):
        c = raw_factory(broker)
        c.send(raw.connect(f"churn-{i}")[: 3 + i % 10])
        c.close()
    bystander.check()
