"""CONNECT / CONNACK: MQTT 3.1.1 section 3.1 and 3.2."""

import time

import mqtt_raw as raw
from conftest import unique


def test_mqtt_level_4_accepted(broker, raw_factory):
    c = raw_factory(broker)
    c.send(raw.connect(unique("id").replace("/", "-"), level=4))
    ack = c.expect(raw.CONNACK)
    # 3.2: fixed header 0x20, remaining length 2, flags 0, return code 0.
    assert ack.raw == bytes([0x20, 0x02, 0x00, 0x00])


def test_mqisdp_level_3_accepted(broker, raw_factory):
    c = raw_factory(broker)
    c.send(raw.connect("legacy-client", proto_name="MQIsdp", level=3))
    ack = c.expect(raw.CONNACK)
    assert ack.body == bytes([0x00, 0x00])


def test_unsupported_protocol_level_gets_0x01_then_close(broker, raw_factory):
    # MQTT-3.1.2-2: unsupported level -> CONNACK 0x01 and disconnect.
    c = raw_factory(broker)
    c.send(raw.connect("bad-level", level=6))
    ack = c.expect(raw.CONNACK)
    assert ack.raw == bytes([0x20, 0x02, 0x00, 0x01])
    assert c.closed_within(3)


def test_first_packet_not_connect_closes(broker, raw_factory):
    # MQTT-3.1.0-1: the first packet must be CONNECT.
    c = raw_factory(broker)
    c.send(raw.subscribe(1, [("a/b", 0)]))
    assert c.closed_within(3)


def test_pingreq_before_connect_closes(broker, raw_factory):
    c = raw_factory(broker)
    c.send(raw.PINGREQ_BYTES)
    assert c.closed_within(3)


def test_second_connect_closes(broker, raw_factory):
    # MQTT-3.1.0-2: a second CONNECT is a protocol violation.
    c = raw_factory(broker)
    c.connect_ok("twice")
    c.send(raw.connect("twice"))
    assert c.closed_within(3)


def test_empty_client_id_with_clean_session_accepted(broker, raw_factory):
    # MQTT-3.1.3-6: zero-byte id with CleanSession=1 gets a server-assigned id.
    c = raw_factory(broker)
    ack = c.connect("", clean=True)
    assert ack.body == bytes([0x00, 0x00])
    # And it is a working session.
    assert c.subscribe([("empty/id", 1)]) == [1]


def test_two_empty_client_ids_coexist(broker, raw_factory):
    # Each zero-byte id is assigned a unique id (MQTT-3.1.3-6): the second doesn't take over the first.
    a, b = raw_factory(broker), raw_factory(broker)
    a.connect_ok("")
    b.connect_ok("")
    topic = unique()
    assert a.subscribe([(topic, 0)]) == [0]
    b.send(raw.publish(topic, b"x"))
    assert a.next_publish().payload == b"x"


def test_empty_client_id_without_clean_session_refused_0x02(broker, raw_factory):
    # MQTT-3.1.3-8: CONNACK 0x02 (identifier rejected), then close.
    c = raw_factory(broker)
    ack = c.connect("", clean=False)
    assert ack.raw == bytes([0x20, 0x02, 0x00, 0x02])
    assert c.closed_within(3)


def test_takeover_closes_old_connection(broker, raw_factory):
    # MQTT-3.1.4-2: a second client with the same id disconnects the existing one.
    old, new = raw_factory(broker), raw_factory(broker)
    old.connect_ok("same-id")
    new.connect_ok("same-id")
    assert old.closed_within(3)
    # The new connection keeps working.
    new.send(raw.PINGREQ_BYTES)
    new.expect(raw.PINGRESP)


def test_session_present_flags(broker, raw_factory):
    # MQTT-3.2.2-1: clean session -> 0; MQTT-3.2.2-3: no stored session -> 0;
    # MQTT-3.2.2-2: stored session resumed -> 1.
    cid = "sp-" + unique("x").split("/")[1]
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=True) is False
    c.send(raw.DISCONNECT_BYTES)
    c.close()

    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is False
    c.subscribe([("sp/topic", 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()

    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is True
    c.send(raw.DISCONNECT_BYTES)
    c.close()

    # A clean connect discards the session and reports 0 ...
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=True) is False
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    # ... and leaves none behind (MQTT-3.1.2-6).
    c = raw_factory(broker)
    assert c.connect_ok(cid, clean=False) is False


def test_silent_socket_closed_by_connect_timeout(broker, raw_factory, departure):
    # Section 3.1.4 (Response), item 1: "If the Server does not receive a CONNECT Packet within a
    # reasonable amount of time after the Network Connection is established, the Server SHOULD
    # close the connection." Ours: connect_timeout 2.
    departure("mosquitto", "mosquitto 2.0.11 has no CONNECT timeout: a TCP socket that sends nothing "
              "stays open (observed still open after 75 s); MQTT 3.1.1 section 3.1.4 item 1 says the "
              "server SHOULD close it after a reasonable time")
    c = raw_factory(broker)
    start = time.monotonic()
    assert c.closed_within(5), "silent socket not closed within 5 s"
    assert time.monotonic() - start >= 1.0


def test_connack_then_usable_after_username(broker, raw_factory):
    # 3.1.3.4: a username without password is well formed; anonymous broker accepts it.
    c = raw_factory(broker)
    assert c.connect("user-client", username="alice").body == bytes([0, 0])
