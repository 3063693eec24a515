"""MQTT 5.0 CONNECT / CONNACK / DISCONNECT: sections 3.1, 3.2, 3.14, 4.1 (sessions), 4.13 (errors).

Each case runs against mosquitto 2.0.11 and our broker (the `broker` fixtures of conftest.py)."""

import time

import mqtt5_raw as m5
import mqtt_raw
from mqtt5_client import cid
from conftest import unique

# Neither a wrong password nor an unknown user is "malformed": MQTT 5.0 (3.2.2.2) leaves the choice between 0x86
# (Bad User Name or Password) and 0x87 (Not authorized) open. mosquitto 2.0.11 answers 0x87; we answer 0x86, as our
# 3.1.1 CONNACK answers 0x04 for the same case (test_auth.py).
BAD_CREDENTIALS = {"mosquitto": m5.NOT_AUTHORIZED, "mqttchat": m5.BAD_USER_NAME_OR_PASSWORD}


# --------------------------------------------------------------------------- CONNACK properties (3.2.2.3)

def test_connack_properties_advertise_the_features(broker, raw5_factory):
    c = raw5_factory(broker)
    ack = c.connect_ok(cid("props"))
    assert not ack.session_present
    p = ack.props
    # Topic aliases from the client are supported (an absent Topic Alias Maximum would mean none, 3.2.2.3.8).
    assert p.get(m5.TOPIC_ALIAS_MAXIMUM, 0) >= 1, ack
    # Absent means: QoS 2, retain, wildcards, subscription identifiers, shared subscriptions all available.
    assert p.get(m5.MAXIMUM_QOS, 2) == 2, ack
    assert p.get(m5.RETAIN_AVAILABLE, 1) == 1, ack
    assert p.get(m5.WILDCARD_SUBSCRIPTION_AVAILABLE, 1) == 1, ack
    assert p.get(m5.SUBSCRIPTION_IDENTIFIER_AVAILABLE, 1) == 1, ack
    assert p.get(m5.SHARED_SUBSCRIPTION_AVAILABLE, 1) == 1, ack
    assert p.get(m5.RECEIVE_MAXIMUM, 65535) >= 1, ack
    # A client that sent a ClientID is not assigned another (3.2.2.3.7).
    assert m5.ASSIGNED_CLIENT_IDENTIFIER not in p, ack
    # Each property at most once (every CONNACK property is "Protocol Error to include more than once").
    ids = [k for k, _ in p if k != m5.USER_PROPERTY]
    assert len(ids) == len(set(ids)), ack


def test_connack_receive_maximum_is_max_inflight_messages(start_broker, raw5_factory):
    # Our config key max_inflight_messages, as in mosquitto, is the broker's Receive Maximum (3.2.2.3.3).
    b = start_broker(max_inflight_messages=7)
    ack = raw5_factory(b).connect_ok(cid("rm"))
    assert ack.props.get(m5.RECEIVE_MAXIMUM) == 7, ack


def test_connack_maximum_qos_when_limited(start_broker, raw5_factory):
    # 3.2.2.3.4: a Server that does not support QoS 2 MUST send Maximum QoS [MQTT-3.2.2-9]; a QoS 2 PUBLISH is then
    # answered with DISCONNECT 0x9B (QoS not supported) [MQTT-3.2.2-11]. A subscription asking for QoS 2 is granted
    # at most QoS 1.
    b = start_broker(max_qos=1)
    c = raw5_factory(b)
    ack = c.connect_ok(cid("mq"))
    assert ack.props.get(m5.MAXIMUM_QOS) == 1, ack
    assert c.subscribe([(unique("mq"), 2)]) in ([1], [0]), "granted above Maximum QoS"
    c.publish(unique("mq"), b"q1", 1)
    c.send(m5.publish(unique("mq"), b"q2", 2, 9))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.QOS_NOT_SUPPORTED, d


def test_connack_retain_not_available(start_broker, raw5_factory):
    # 3.2.2.3.5: retain_available false -> Retain Available 0; a retained PUBLISH is then answered with
    # DISCONNECT 0x9A (Retain not supported) [MQTT-3.2.2-13].
    b = start_broker(retain_available="false")
    c = raw5_factory(b)
    ack = c.connect_ok(cid("ra"))
    assert ack.props.get(m5.RETAIN_AVAILABLE) == 0, ack
    c.send(m5.publish(unique("ra"), b"kept?", 0, retain=True))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.RETAIN_NOT_SUPPORTED, d


def test_connack_maximum_packet_size_and_packet_too_large(start_broker, raw5_factory):
    # 3.2.2.3.6: max_packet_size -> Maximum Packet Size; a bigger packet from the client is answered with
    # DISCONNECT 0x95 (Packet too large) (4.13, 3.2.2.3.6).
    b = start_broker(max_packet_size=1000)
    c = raw5_factory(b)
    ack = c.connect_ok(cid("mps"))
    assert ack.props.get(m5.MAXIMUM_PACKET_SIZE) == 1000, ack
    c.publish(unique("mps"), b"x" * 500, 1)  # fits
    c.send(m5.publish(unique("mps"), b"x" * 1500))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.PACKET_TOO_LARGE, d


def test_assigned_client_identifier(broker, raw5_factory):
    # 3.2.2.3.7: an empty ClientID gets an Assigned Client Identifier [MQTT-3.2.2-16], unique per connection; the
    # client can then resume that session with it (MQTT 5 allows an empty ClientID with Clean Start 0, 3.1.3.1).
    first = raw5_factory(broker)
    ack1 = first.connect_ok("", clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    ack2 = raw5_factory(broker).connect_ok("")
    assigned = ack1.props.get(m5.ASSIGNED_CLIENT_IDENTIFIER)
    assert assigned and ack2.props.get(m5.ASSIGNED_CLIENT_IDENTIFIER), (ack1, ack2)
    assert assigned != ack2.props.get(m5.ASSIGNED_CLIENT_IDENTIFIER)
    first.subscribe([(unique("aci"), 1)])
    first.send(m5.disconnect())
    assert first.closed_within(3)
    again = raw5_factory(broker)
    ack = again.connect_ok(assigned, clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    assert ack.session_present, ack
    assert m5.ASSIGNED_CLIENT_IDENTIFIER not in ack.props


def test_server_keep_alive_when_above_max_keepalive(start_broker, raw5_factory):
    # 3.2.2.3.14: the Server may impose a Keep Alive; it then sends Server Keep Alive and the client MUST use it.
    # mosquitto's max_keepalive caps the client's value.
    b = start_broker(max_keepalive=30)
    ack = raw5_factory(b).connect_ok(cid("ska"), keepalive=100)
    assert ack.props.get(m5.SERVER_KEEP_ALIVE) == 30, ack
    ack = raw5_factory(b).connect_ok(cid("ska"), keepalive=20)
    assert ack.props.get(m5.SERVER_KEEP_ALIVE, 20) == 20, ack


# --------------------------------------------------------------------------- refusals (3.2.2.2)

def test_unsupported_protocol_version(broker, raw5_factory):
    # 3.1.2.2: a version the Server does not accept MAY be answered with CONNACK 0x84 and then MUST close
    # [MQTT-3.1.2-2]. The Server cannot know the client's packet format, so the 3.1.1 answer (0x01, two bytes) is
    # common: mosquitto 2.0.11 sends that one. Either form, then a close.
    c = raw5_factory(broker)
    c.send(m5.connect(cid("v6"), level=6, props={m5.SESSION_EXPIRY_INTERVAL: 10}))
    ack = c.expect(m5.CONNACK)
    assert ack.body in (b"\x00\x01", b"\x00\x84\x00"), ack
    assert c.closed_within(3)


def test_rejected_client_identifier(start_broker, raw5_factory, broker_kind):
    # [MQTT-3.1.3-8]: a rejected ClientID MAY be answered with CONNACK 0x85 (Client Identifier not valid), then the
    # connection MUST close. With allow_zero_length_clientid false an empty ClientID is rejected. mosquitto 2.0.11
    # answers 0x80 (Unspecified error), which the spec allows; ours uses the specific code.
    b = start_broker(allow_zero_length_clientid="false")
    c = raw5_factory(b)
    ack = c.connect("")
    expected = {"mosquitto": m5.UNSPECIFIED_ERROR, "mqttchat": m5.CLIENT_IDENTIFIER_NOT_VALID}[broker_kind]
    assert ack.reason == expected, ack
    assert c.closed_within(3)
    assert raw5_factory(b).connect_ok(cid("named"))


def test_password_file_bad_credentials_and_not_authorized(auth5_broker, raw5_factory, broker_kind):
    b = auth5_broker(passwd=[("alice", "s3cret")], allow_anonymous="false")
    assert raw5_factory(b).connect_ok(cid("a"), username="alice", password=b"s3cret")
    for kw in (dict(username="alice", password=b"wrong"), dict(username="mallory", password=b"x")):
        c = raw5_factory(b)
        ack = c.connect(cid("bad"), **kw)
        assert ack.reason == BAD_CREDENTIALS[broker_kind], (kw, ack)
        assert c.closed_within(3)
    anonymous = raw5_factory(b)
    ack = anonymous.connect(cid("anon"))
    assert ack.reason == m5.NOT_AUTHORIZED, ack
    assert anonymous.closed_within(3)


def test_unknown_authentication_method(broker, raw5_factory):
    # 3.1.2.11.9 / 4.12: a Server that does not support the Authentication Method answers CONNACK 0x8C (Bad
    # authentication method) and closes [MQTT-4.12.0-1].
    c = raw5_factory(broker)
    ack = c.connect(cid("auth"), props={m5.AUTHENTICATION_METHOD: "SCRAM-SHA-512",
                                         m5.AUTHENTICATION_DATA: b"n,,n=user,r=nonce"})
    assert ack.reason == m5.BAD_AUTHENTICATION_METHOD, ack
    assert c.closed_within(3)


# --------------------------------------------------------------------------- session expiry (3.1.2.11.2, 4.1)

def _queued_qos1(broker, raw5_factory, client_id, topic, connect_props):
    """A session with a QoS 1 subscription to `topic`, disconnected; one QoS 1 message published to it."""
    s = raw5_factory(broker)
    s.connect_ok(client_id, clean_start=True, props=connect_props)
    assert s.subscribe([(topic, 1)]) == [1]
    s.send(m5.disconnect())
    assert s.closed_within(3)
    p = raw5_factory(broker)
    p.connect_ok(cid("pub"))
    p.publish(topic, b"while away", 1)


def test_session_expiry_resumes_and_delivers_queued(broker, raw5_factory):
    topic, client_id = unique("se"), cid("se")
    _queued_qos1(broker, raw5_factory, client_id, topic, {m5.SESSION_EXPIRY_INTERVAL: 60})
    back = raw5_factory(broker)
    ack = back.connect_ok(client_id, clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    assert ack.session_present, ack
    got = back.next_publish()
    assert (got.topic, got.payload, got.qos) == (topic, b"while away", 1)


def test_session_expiry_zero_ends_with_the_connection(broker, raw5_factory):
    # 3.1.2.11.2: no Session Expiry Interval means 0: the session ends when the connection closes.
    topic, client_id = unique("se0"), cid("se0")
    _queued_qos1(broker, raw5_factory, client_id, topic, None)
    back = raw5_factory(broker)
    ack = back.connect_ok(client_id, clean_start=False)
    assert not ack.session_present, ack
    back.expect_nothing(0.7)


def test_session_expires_after_the_interval(broker, raw5_factory):
    topic, client_id = unique("se1"), cid("se1")
    _queued_qos1(broker, raw5_factory, client_id, topic, {m5.SESSION_EXPIRY_INTERVAL: 1})
    time.sleep(2.5)
    back = raw5_factory(broker)
    ack = back.connect_ok(client_id, clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    assert not ack.session_present, ack
    back.expect_nothing(0.7)


def test_clean_start_discards_the_session(broker, raw5_factory):
    topic, client_id = unique("cs"), cid("cs")
    _queued_qos1(broker, raw5_factory, client_id, topic, {m5.SESSION_EXPIRY_INTERVAL: 60})
    back = raw5_factory(broker)
    ack = back.connect_ok(client_id, clean_start=True, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    assert not ack.session_present, ack
    back.expect_nothing(0.7)


def test_disconnect_extends_session_expiry(broker, raw5_factory):
    # 3.14.2.2.2: the Session Expiry Interval of DISCONNECT replaces the one of CONNECT.
    client_id = cid("dx")
    c = raw5_factory(broker)
    c.connect_ok(client_id, props={m5.SESSION_EXPIRY_INTERVAL: 1})
    c.subscribe([(unique("dx"), 1)])
    c.send(m5.disconnect(0, {m5.SESSION_EXPIRY_INTERVAL: 60}))
    assert c.closed_within(3)
    time.sleep(2.5)
    ack = raw5_factory(broker).connect_ok(client_id, clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    assert ack.session_present, ack


def test_disconnect_with_zero_expiry_ends_the_session(broker, raw5_factory):
    client_id = cid("d0")
    c = raw5_factory(broker)
    c.connect_ok(client_id, props={m5.SESSION_EXPIRY_INTERVAL: 60})
    c.subscribe([(unique("d0"), 1)])
    c.send(m5.disconnect(0, {m5.SESSION_EXPIRY_INTERVAL: 0}))
    assert c.closed_within(3)
    ack = raw5_factory(broker).connect_ok(client_id, clean_start=False)
    assert not ack.session_present, ack


def test_disconnect_cannot_set_expiry_after_zero(broker, raw5_factory):
    # [MQTT-3.14.2-2]: a non-zero Session Expiry Interval in DISCONNECT after a CONNECT with 0 is a Protocol Error;
    # the Server answers DISCONNECT 0x82 (mosquitto sends it; 4.13 allows a bare close, we require the code) and
    # the session still ends with the connection.
    client_id = cid("dz")
    c = raw5_factory(broker)
    c.connect_ok(client_id)
    c.send(m5.disconnect(0, {m5.SESSION_EXPIRY_INTERVAL: 60}))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.PROTOCOL_ERROR, d
    ack = raw5_factory(broker).connect_ok(client_id, clean_start=False)
    assert not ack.session_present, ack


# --------------------------------------------------------------------------- server-side disconnects

def test_takeover_sends_session_taken_over(broker, raw5_factory, departure):
    # [MQTT-3.1.4-3]: the Server sends the existing Client a DISCONNECT with Reason Code 0x8E (Session taken over)
    # and closes its connection.
    departure("mosquitto", "MQTT 5.0 §3.1.4 (MQTT-3.1.4-3): mosquitto 2.0.11 closes the existing connection on "
              "takeover without sending it DISCONNECT 0x8E (Session taken over)")
    client_id = cid("take")
    old = raw5_factory(broker)
    old.connect_ok(client_id)
    raw5_factory(broker).connect_ok(client_id)
    d = old.disconnect_within(3)
    assert d is not None and d.reason == m5.SESSION_TAKEN_OVER, d


def test_takeover_closes_the_old_connection(broker, raw5_factory):
    # The part of MQTT-3.1.4-3 both brokers share: the old connection closes, the new one works.
    client_id = cid("take")
    old = raw5_factory(broker)
    old.connect_ok(client_id)
    new = raw5_factory(broker)
    new.connect_ok(client_id)
    assert old.closed_within(3)
    topic = unique("take")
    assert new.subscribe([(topic, 1)]) == [1]
    new.publish(topic, b"still here", 1)
    assert new.next_publish().payload == b"still here"


def test_keep_alive_timeout(broker, raw5_factory):
    # 3.1.2.10 [MQTT-3.1.2-22]: silence for 1.5 x Keep Alive closes the connection "as if the network had failed";
    # a DISCONNECT before it is optional (4.13), and if sent carries 0x8D (Keep Alive timeout). mosquitto 2.0.11
    # just closes (its keepalive scan runs every 5 s: hence the bound).
    c = raw5_factory(broker)
    c.connect_ok(cid("ka"), keepalive=1)
    start = time.monotonic()
    d = c.disconnect_within(1.5 + 7)
    assert time.monotonic() - start >= 1.0
    assert d is None or d.reason == m5.KEEP_ALIVE_TIMEOUT, d


def test_malformed_packet_gets_disconnect_0x81(broker, raw5_factory):
    # A PUBLISH with QoS 3 is malformed [MQTT-3.3.1-4]; mosquitto answers DISCONNECT 0x81 before closing (4.13 makes
    # the DISCONNECT optional; we require what mosquitto does, since it tells a v5 client why).
    c = raw5_factory(broker)
    c.connect_ok(cid("mal"))
    c.send(m5.packet(m5.PUBLISH, 0x06, m5.utf8("x") + b"\x00\x01\x00"))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.MALFORMED_PACKET, d
    assert broker.alive()


def test_unknown_property_is_malformed(broker, raw5_factory):
    # 2.2.2.2: an identifier that is not a property of that packet makes it malformed.
    c = raw5_factory(broker)
    c.connect_ok(cid("mal"))
    c.send(m5.packet(m5.PUBLISH, 0, m5.utf8(unique("mal")) + b"\x02\x63\x00"))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.MALFORMED_PACKET, d


def test_wildcard_in_topic_name_is_a_protocol_error(broker, raw5_factory):
    # [MQTT-3.3.2-2]: a Topic Name MUST NOT contain wildcards. mosquitto answers 0x82 (Protocol Error); 0x90 (Topic
    # Name invalid) is the more specific code and also right.
    c = raw5_factory(broker)
    c.connect_ok(cid("wild"))
    c.send(m5.publish("a/+/b", b"x", 1, 1))
    d = c.disconnect_within(3)
    assert d is not None and d.reason in (m5.PROTOCOL_ERROR, m5.TOPIC_NAME_INVALID), d


def test_second_connect_closes_the_connection(broker, raw5_factory):
    # [MQTT-3.1.0-2]: a second CONNECT is a Protocol Error; a DISCONNECT before the close is optional and if sent
    # carries 0x82 (mosquitto 2.0.11 closes without one).
    c = raw5_factory(broker)
    c.connect_ok(cid("twice"))
    c.send(m5.connect(cid("again")))
    d = c.disconnect_within(3)
    assert d is None or d.reason == m5.PROTOCOL_ERROR, d
    assert broker.alive()


def test_v311_and_v5_clients_share_a_broker(broker, raw5_factory, raw_factory):
    # The v5 CONNACK format is used only for v5 clients: a 3.1.1 CONNECT still gets the two-byte 3.1.1 CONNACK.
    old = raw_factory(broker)
    ack = old.connect(cid("v311"))
    assert ack.raw == bytes([0x20, 0x02, 0x00, 0x00])
    new = raw5_factory(broker)
    assert new.connect_ok(cid("v5")).reason == 0
