"""MQTT 5 enhanced authentication (4.12): SCRAM-SHA-512 over the password file's users.

mosquitto 2.0.11 has no SCRAM built in (it needs a plugin), so it refuses the method with CONNACK 0x8C (Bad
authentication method); ours runs the exchange from the same `mosquitto_passwd` file: a `$7$` hash is the salted
password SCRAM needs (RFC 5802 / 7677 with SHA-512)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import mqtt5_raw as m5
from mqtt5_client import cid

METHOD = "SCRAM-SHA-512"


def _client_final(first_bare: str, server_first: str, password: str) -> tuple[bytes, bytes]:
    """client-final for server-first, and the server signature the client then expects."""
    attrs = dict(field.split("=", 1) for field in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]), 64)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    stored_key = hashlib.sha512(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, "sha512").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_key = hmac.new(salted, b"Server Key", "sha512").digest()
    server_signature = hmac.new(server_key, auth_message, "sha512").digest()
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), server_signature


def _scram_connect(broker, raw5_factory, user: str, password: str):
    """Runs the exchange; returns (client, CONNACK or the first refusal)."""
    c = raw5_factory(broker)
    first_bare = f"n={user},r=fyko+d2lbbFgONRv9qkxdawL"
    c.send(m5.connect(cid("scram"), props=[(m5.AUTHENTICATION_METHOD, METHOD),
                                          (m5.AUTHENTICATION_DATA, ("n,," + first_bare).encode())]))
    p = c.recv()
    if p.ptype != m5.AUTH:
        return c, p, None
    assert p.reason == 0x18 and p.props.get(m5.AUTHENTICATION_METHOD) == METHOD, p
    server_first = p.props.get(m5.AUTHENTICATION_DATA).decode()
    assert server_first.startswith("r=fyko+d2lbbFgONRv9qkxdawL"), server_first  # the client's nonce, extended
    final, server_signature = _client_final(first_bare, server_first, password)
    c.send(m5.auth(0x18, props=[(m5.AUTHENTICATION_METHOD, METHOD), (m5.AUTHENTICATION_DATA, final)]))
    return c, c.expect(m5.CONNACK), server_signature


def test_scram_sha512_authenticates_from_the_password_file(auth5_broker, raw5_factory, broker_kind):
    b = auth5_broker(passwd=[("alice", "s3cret")], allow_anonymous="false")
    c, ack, server_signature = _scram_connect(b, raw5_factory, "alice", "s3cret")
    if broker_kind == "mosquitto":
        assert ack.ptype == m5.CONNACK and ack.reason == m5.BAD_AUTHENTICATION_METHOD, ack
        return
    assert ack.reason == 0, ack
    assert ack.props.get(m5.AUTHENTICATION_METHOD) == METHOD, ack
    # server-final proves the broker holds alice's salted password.
    assert ack.props.get(m5.AUTHENTICATION_DATA) == b"v=" + base64.b64encode(server_signature), ack
    topic = cid("scram/t")
    assert c.subscribe([(topic, 1)]) == [1]
    c.publish(topic, b"hello", 1)
    assert c.next_publish().payload == b"hello"


def test_scram_wrong_password_or_unknown_user_is_refused(auth5_broker, raw5_factory, broker_kind):
    b = auth5_broker(passwd=[("alice", "s3cret")], allow_anonymous="false")
    for user, password in (("alice", "wrong"), ("mallory", "s3cret")):
        c, ack, _ = _scram_connect(b, raw5_factory, user, password)
        expected = m5.BAD_AUTHENTICATION_METHOD if broker_kind == "mosquitto" else 0x86
        assert ack.ptype == m5.CONNACK and ack.reason == expected, (user, ack)
        assert c.closed_within(3)


def test_unknown_method_and_stray_auth(auth5_broker, raw5_factory, broker_kind):
    b = auth5_broker(passwd=[("alice", "s3cret")], allow_anonymous="false")
    c = raw5_factory(b)
    ack = c.connect(cid("m"), props=[(m5.AUTHENTICATION_METHOD, "KERBEROS")])
    assert ack.ptype == m5.CONNACK and ack.reason == m5.BAD_AUTHENTICATION_METHOD, ack
    assert c.closed_within(3)
    # An AUTH after a plain CONNECT (re-authentication is not offered) is a protocol error.
    d = raw5_factory(b)
    assert d.connect_ok(cid("plain"), username="alice", password=b"s3cret")
    d.send(m5.auth(0x19, props=[(m5.AUTHENTICATION_METHOD, METHOD)]))
    disconnect = d.disconnect_within(3)
    if broker_kind == "mqttchat":
        assert disconnect is not None and disconnect.reason == m5.PROTOCOL_ERROR, disconnect
    else:  # mosquitto closes, with or without a DISCONNECT
        assert disconnect is None or disconnect.reason in (m5.PROTOCOL_ERROR, m5.BAD_AUTHENTICATION_METHOD), disconnect
