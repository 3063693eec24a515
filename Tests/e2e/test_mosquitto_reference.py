"""Behaviours that mosquitto's own broker tests (eclipse/mosquitto `test/broker/`) check, written afresh for this
suite and run against both brokers, at MQTT 3.1.1 and 5 where the behaviour exists in both.

mosquitto's tests start their own broker binary and read its log, so they cannot run against another broker as
they are; docs/testing.md ("mosquitto's broker tests") maps each of them to the case here or elsewhere in this
suite that covers the same behaviour, and lists the ones that test mosquitto-only features (plugins, dynamic
security, PROXY protocol, `$CONTROL`). Where the two brokers answer differently and the specification allows
both, the test asserts each broker's answer and says why."""

from __future__ import annotations

import socket
import time

import pytest

import mqtt5_raw as m5
import mqtt_raw as m3
from conftest import Broker, managed_brokers, unique

VERSIONS = [4, 5]


def raw(broker: Broker, version: int, made: list):
    client = (m3.RawClient if version == 4 else m5.Raw5Client)(broker.port)
    made.append(client)
    return client


def codec(version: int):
    return m3 if version == 4 else m5


def connack_reason(ack, version: int) -> int:
    return ack.body[1] if version == 4 else ack.reason


def watch(broker: Broker, version: int, made: list, topic: str, qos: int, **connect_kw):
    """A connected client subscribed to `topic` (its SUBACK read)."""
    watcher = raw(broker, version, made)
    watcher.connect(unique("w"), **connect_kw)
    watcher.send(codec(version).subscribe(1, [(topic, qos)]))
    watcher.expect(m3.SUBACK)
    return watcher


def closed_without_connack(client, timeout: float = 3.0) -> bool:
    """True when the server closes the connection without answering (a malformed CONNECT)."""
    try:
        packet = client.recv(timeout)
    except m3.Closed:
        return True
    raise AssertionError(f"expected the connection to be closed, got {packet!r}")


@pytest.fixture
def clients():
    made: list = []
    yield made
    for client in made:
        client.close()


class CRLFBroker(Broker):
    """A broker whose configuration file has Windows line endings."""

    def config_text(self) -> str:
        return super().config_text().replace("\n", "\r\n")


@pytest.fixture
def crlf_broker(broker_kind, tmp_path, request):
    def make(index: int, **options) -> Broker:
        directory = tmp_path / f"crlf{index}"
        directory.mkdir()
        return CRLFBroker(broker_kind, directory, options)

    yield from managed_brokers(request, make)


# --------------------------------------------------------------------------- 01: connecting

def test_config_with_windows_line_endings(crlf_broker, tmp_path, clients):
    """01-connect-windows-line-endings: every line of a CRLF config is read, options included."""
    acl = tmp_path / "acl"
    acl.write_bytes(b"topic readwrite crlf/#\r\n")
    b = crlf_broker(max_inflight_messages=3, acl_file=acl, user="root")
    c = raw(b, 5, clients)
    ack = c.connect_ok(unique("crlf"))
    assert ack.props.get(m5.RECEIVE_MAXIMUM) == 3, ack
    topic = f"crlf/{unique()}"
    assert c.subscribe([(topic, 1)]) == [1]
    assert c.publish(topic, b"x", 1).reason == m5.SUCCESS
    assert c.next_publish().payload == b"x"


@pytest.mark.parametrize("version", VERSIONS)
def test_refused_login_publishes_no_will(start_broker, tmp_path, clients, version):
    """01-connect-uname-password-denied-no-will: a CONNECT refused for its credentials leaves no will behind."""
    from conftest import make_passwd_with_mosquitto
    make_passwd_with_mosquitto(tmp_path / "passwd", [("alice", "secret")])
    b = start_broker(password_file=tmp_path / "passwd", user="root")
    topic = unique("will")
    watcher = watch(b, version, clients, topic, 1, username="alice", password=b"secret")
    intruder = raw(b, version, clients)
    ack = intruder.connect(unique("i"), username="alice", password=b"wrong", will=(topic, b"died", 1, False))
    assert connack_reason(ack, version) != 0, ack
    intruder.close()
    watcher.expect_nothing(1.0)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_client_id_refused_when_not_allowed(start_broker, clients, version, broker_kind):
    """01-connect-zero-length-id: `allow_zero_length_clientid false` refuses an empty ClientID. At 3.1.1 both
    answer 0x02 (identifier rejected). At MQTT 5 we answer 0x85 (Client Identifier not valid), the code 3.1.3.1
    names for it; mosquitto 2.0.11 answers 0x80 (unspecified error)."""
    b = start_broker(allow_zero_length_clientid="false")
    ack = raw(b, version, clients).connect("")
    expected = 0x02 if version == 4 else {"mosquitto": 0x80, "mqttchat": 0x85}[broker_kind]
    assert connack_reason(ack, version) == expected, ack
    # A client that names itself still gets in.
    assert connack_reason(raw(b, version, clients).connect(unique("named")), version) == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_keepalive_above_max_keepalive(start_broker, clients, version):
    """01-connect-max-keepalive: at 3.1.1 a longer keep-alive is accepted as asked; at MQTT 5 the CONNACK's
    Server Keep Alive lowers it (zero, "no keep-alive", included)."""
    b = start_broker(max_keepalive=10)
    for asked in (100, 0):
        ack = raw(b, version, clients).connect(unique("ka"), keepalive=asked)
        assert connack_reason(ack, version) == 0, ack
        if version == 5:
            assert ack.props.get(m5.SERVER_KEEP_ALIVE) == 10, ack


# --------------------------------------------------------------------------- 07: malformed wills

def will_connect(version: int, client_id: str, will, flags_or: int = 0) -> bytes:
    data = bytearray(codec(version).connect(client_id, will=will) if will else codec(version).connect(client_id))
    data[9] |= flags_or  # fixed header (2) + "MQTT" (6) + level (1): the connect flags
    return bytes(data)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", ["empty will topic", "will topic not UTF-8", "will QoS without will flag",
                                  "will retain without will flag", "will QoS 3"])
def test_malformed_will_refused(broker, clients, version, case):
    """07-will-null-topic, 07-will-invalid-utf8, 07-will-no-flag: a CONNECT with a will that cannot be published
    is a protocol error (3.1.2.5, 3.1.3.3), so the connection is closed and nothing is published."""
    cases = {
        "empty will topic": will_connect(version, unique("w"), ("", b"x", 0, False)),
        "will topic not UTF-8": will_connect(version, unique("w"), (b"a/\xc0\xaf", b"x", 0, False)),
        "will QoS without will flag": will_connect(version, unique("w"), None, flags_or=0x08),
        "will retain without will flag": will_connect(version, unique("w"), None, flags_or=0x20),
        "will QoS 3": will_connect(version, unique("w"), ("t", b"x", 0, False), flags_or=0x18),
    }
    c = raw(broker, version, clients)
    c.send(cases[case])
    assert closed_without_connack(c)


@pytest.mark.parametrize("version", VERSIONS)
def test_will_with_empty_payload_and_qos0(broker, clients, version):
    """07-will-null and 07-will-qos0: an empty will payload is published as an empty message, at the will's QoS."""
    topic = unique("will")
    watcher = watch(broker, version, clients, topic, 2)
    dying = raw(broker, version, clients)
    dying.connect(unique("d"), will=(topic, b"", 0, False))
    dying.close()
    message = watcher.expect(m3.PUBLISH)
    assert (message.topic, message.payload, message.qos) == (topic, b"", 0)


# --------------------------------------------------------------------------- 02/03: topics and packet ids

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("packet", ["PUBLISH", "SUBSCRIBE"])
def test_topic_not_utf8_closes_the_connection(broker, clients, version, packet):
    """03-publish-invalid-utf8, 02-subscribe-invalid-utf8: an ill-formed UTF-8 topic is a malformed packet (1.5.4);
    at MQTT 5 the server says so with DISCONNECT 0x81 first."""
    c = raw(broker, version, clients)
    c.connect(unique("utf"))
    properties = b"" if version == 4 else b"\x00"
    if packet == "PUBLISH":
        c.send(codec(version).packet(m3.PUBLISH, 0x02, b"\x00\x04a/\xc0\xaf\x00\x03" + properties + b"x"))
    else:
        c.send(codec(version).packet(m3.SUBSCRIBE, 0x02, b"\x00\x03" + properties + b"\x00\x04a/\xc0\xaf\x00"))
    if version == 4:
        assert c.closed_within(3)
    else:
        d = c.disconnect_within(3)
        assert d is not None and d.reason == m5.MALFORMED_PACKET, d


@pytest.mark.parametrize("version", VERSIONS)
def test_publish_to_sys_is_not_delivered(broker, clients, version):
    """03-publish-dollar: clients cannot publish into `$SYS`; the PUBLISH is acknowledged (0x87 at MQTT 5) and
    dropped."""
    topic = f"$SYS/{unique('fake')}"
    watcher = watch(broker, version, clients, topic, 1)
    c = raw(broker, version, clients)
    c.connect(unique("p"))
    c.send(codec(version).publish(topic, b"x", 1, 3))
    ack = c.expect(m3.PUBACK)
    assert ack.pid == 3
    if version == 5:
        assert ack.reason == m5.NOT_AUTHORIZED, ack
    watcher.expect_nothing(1.0)


@pytest.mark.parametrize("version", VERSIONS)
def test_qos2_packet_id_reused_after_pubcomp(broker, clients, version):
    """03-publish-qos2-reuse-mid: once PUBCOMP is sent the id is free, and a new message with it is delivered."""
    topic = unique("reuse")
    watcher = watch(broker, version, clients, topic, 0)
    c = raw(broker, version, clients)
    c.connect(unique("p"))
    for payload in (b"one", b"two"):
        c.send(codec(version).publish(topic, payload, 2, 7))
        assert c.expect(m3.PUBREC).pid == 7
        c.send(codec(version).pubrel(7))
        assert c.expect(m3.PUBCOMP).pid == 7
    assert [watcher.expect(m3.PUBLISH).payload for _ in range(2)] == [b"one", b"two"]


@pytest.mark.parametrize("version", VERSIONS)
def test_longest_topic_round_trip(broker, clients, version):
    """02-subscribe-long-topic, 03-publish-long-topic: a 65,535-byte topic (the longest a UTF-8 string can be) is
    subscribed to, published and delivered intact."""
    topic = "l" * 65535
    watcher = watch(broker, version, clients, topic, 0)
    c = raw(broker, version, clients)
    c.connect(unique("p"))
    c.send(codec(version).publish(topic, b"long", 0))
    message = watcher.expect(m3.PUBLISH)
    assert (message.topic, message.payload) == (topic, b"long")


# --------------------------------------------------------------------------- 09: access control

@pytest.mark.parametrize("version", VERSIONS)
def test_acl_access_variants(start_broker, tmp_path, clients, version):
    """09-acl-access-variants: read, write, readwrite and deny rules; a message is delivered only where the
    publisher may write and the subscriber may read. (A filter the client may not read is refused at SUBSCRIBE by
    us and granted but never delivered by mosquitto: either way nothing arrives.)"""
    prefix = unique("acl")
    acl = tmp_path / "acl"
    acl.write_text(f"topic read {prefix}/r/#\ntopic write {prefix}/w/#\ntopic readwrite {prefix}/rw/#\n"
                   f"topic deny {prefix}/rw/deny/#\n")
    b = start_broker(acl_file=acl, user="root")
    watcher = raw(b, version, clients)
    watcher.connect(unique("s"))
    for index, area in enumerate(("r", "w", "rw"), start=1):
        watcher.send(codec(version).subscribe(index, [(f"{prefix}/{area}/#", 0)]))
        watcher.expect(m3.SUBACK)
    c = raw(b, version, clients)
    c.connect(unique("p"))
    for area in ("r/x", "w/x", "rw/deny/x", "rw/x"):
        c.send(codec(version).publish(f"{prefix}/{area}", area.encode(), 0))
    delivered = watcher.expect(m3.PUBLISH)
    assert delivered.payload == b"rw/x", delivered
    watcher.expect_nothing(0.5)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_acl_file_denies_everything(start_broker, tmp_path, clients, version, broker_kind):
    """09-acl-empty-file: an ACL file with no rules grants nothing. Publishes are acknowledged (0x87 at MQTT 5) and
    dropped. SUBSCRIBE: we refuse the filter (0x80 / 0x87); mosquitto 2.0.11 grants it and delivers nothing."""
    acl = tmp_path / "acl"
    acl.write_text("")
    b = start_broker(acl_file=acl, user="root")
    topic = unique("empty")
    watcher = raw(b, version, clients)
    watcher.connect(unique("s"))
    watcher.send(codec(version).subscribe(1, [(topic, 1)]))
    suback = watcher.expect(m3.SUBACK)
    granted = list(suback.body[2:]) if version == 4 else suback.reasons
    refused = 0x80 if version == 4 else m5.NOT_AUTHORIZED
    assert granted == ([1] if broker_kind == "mosquitto" else [refused]), suback
    c = raw(b, version, clients)
    c.connect(unique("p"))
    c.send(codec(version).publish(topic, b"x", 1, 5))
    ack = c.expect(m3.PUBACK)
    if version == 5:
        assert ack.reason == m5.NOT_AUTHORIZED, ack
    watcher.expect_nothing(1.0)


# --------------------------------------------------------------------------- message_size_limit

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_message_size_limit_drops_but_completes_the_flow(start_broker, clients, version, qos):
    """message_size_limit (mosquitto.conf(5)): a payload above the limit is not delivered, its QoS flow still
    completes (MQTT 5 says why: PUBACK / PUBREC 0x95 Packet too large, and a failed PUBREC ends the flow), and the
    connection stays open: a payload at the limit, sent next, is delivered."""
    b = start_broker(message_size_limit=10)
    topic = unique("size")
    watcher = watch(b, version, clients, topic, 2)
    c = raw(b, version, clients)
    c.connect(unique("p"))
    c.send(codec(version).publish(topic, b"x" * 11, qos, 5))
    if qos == 1:
        ack = c.expect(m3.PUBACK)
        assert ack.pid == 5
        if version == 5:
            assert ack.reason == 0x95, ack
    elif qos == 2:
        rec = c.expect(m3.PUBREC)
        assert rec.pid == 5
        if version == 5:
            assert rec.reason == 0x95, rec
        else:  # 3.1.1 cannot say it was dropped: the flow goes on to PUBCOMP
            c.send(codec(version).pubrel(5))
            assert c.expect(m3.PUBCOMP).pid == 5
    c.send(codec(version).publish(topic, b"y" * 10, qos, 6))
    if qos == 1:
        assert c.expect(m3.PUBACK).pid == 6
    elif qos == 2:
        assert c.expect(m3.PUBREC).pid == 6
        c.send(codec(version).pubrel(6))
        assert c.expect(m3.PUBCOMP).pid == 6
    message = watcher.expect(m3.PUBLISH)
    assert message.payload == b"y" * 10
    watcher.expect_nothing(0.5)


@pytest.mark.parametrize("version", VERSIONS)
def test_message_size_limit_refuses_a_larger_will(start_broker, clients, version):
    """A will payload above message_size_limit refuses the CONNECT: 0x95 Packet too large at MQTT 5, 0x05 (not
    authorised) at 3.1.1, which has no better code; a will at the limit is accepted."""
    b = start_broker(message_size_limit=10)
    ack = raw(b, version, clients).connect(unique("w"), will=(unique("will"), b"x" * 11, 0, False))
    assert connack_reason(ack, version) == (0x95 if version == 5 else 0x05), ack
    ack = raw(b, version, clients).connect(unique("w"), will=(unique("will"), b"x" * 10, 0, False))
    assert connack_reason(ack, version) == 0, ack
