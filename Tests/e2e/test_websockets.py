"""MQTT over WebSockets (`protocol websockets`, `http_dir`) on our broker, with paho-mqtt's websockets transport
(path /mqtt, subprotocol "mqtt"), a raw WebSocket client for what paho will not do (dying without DISCONNECT), and
plain TCP clients on the same broker.

Debian's mosquitto 2.0.11 cannot open a WebSocket listener on this machine (a known limitation of that build here),
so the reference for the broker-neutral cases (QoS 0/1/2, retained, wills, persistent sessions, WebSocket and TCP
clients together) is an ejabberd 23.01 node (`ejabberd_peer`: mod_mqtt behind an `ejabberd_http` listener at /mqtt,
started once per module by scripts/ejabberd-peer.sh). Those cases run against both (`ws_target`); on one node
ejabberd departs in none of them (retained messages included: only across a cluster are they node-local), so none
carries an xfail. Password files, http_dir and wss are ours only. The wire format is
RFC 6455 plus MQTT 3.1.1 section 6, and the Swift live tests (Tests/MQTTBrokerTests/Live/WebSocketLiveTests.swift)
cover the frame-level rules.
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import struct
import time
import urllib.error
import urllib.request
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

import mqtt_raw
from conftest import WAIT, Broker, Client, managed_brokers, mqttchat_bin, mosquitto_pub, unique
from test_auth import make_passwd_with_mosquitto
from test_tls import make_certs


@pytest.fixture
def ws_broker(tmp_path, request):
    """ws_broker(**options) -> our broker with a TCP listener (`port`) and a websockets one (`ws_port`)."""
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")

    def make(index: int, **options) -> Broker:
        d = tmp_path / f"ws{index}"
        d.mkdir()
        return Broker("mqttchat", d, {"websockets": True, **options})

    yield from managed_brokers(request, make)


WS_TARGETS = ["mqttchat", "ejabberd"]


@pytest.fixture(params=WS_TARGETS)
def ws_target(request):
    """A broker with a WebSocket listener (`ws_port`, path /mqtt) and a TCP one (`port`): ours, started for the test,
    or the module's ejabberd peer (started on first use only, so `-k mqttchat` never starts it)."""
    if request.param == "mqttchat":
        return request.getfixturevalue("ws_broker")()
    return request.getfixturevalue("ejabberd_peer")


@pytest.fixture
def ws_client():
    """ws_client(broker, client_id=None, clean=True, will=None, connect=True) -> a paho client over WebSockets."""
    made: list[Client] = []

    def factory(broker: Broker, client_id: str | None = None, clean: bool = True, will: tuple | None = None,
                connect: bool = True) -> Client:
        c = Client(broker.ws_port, client_id, clean, 10, will, transport="websockets", login=broker.login)
        made.append(c)
        return c.connect() if connect else c

    yield factory
    for c in made:
        c.stop()


class RawWebSocket:
    """A WebSocket client by hand: the upgrade, masked binary frames out, the broker's frames in."""

    def __init__(self, port: int, subprotocol: str = "mqtt"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           f"Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            assert chunk, "closed during the upgrade"
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        self.status = int(head.split(b" ")[1])

    def send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        header = bytes([0x80 | opcode])
        n = len(payload)
        header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack("!H", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv_frame(self) -> tuple[int, bytes]:
        while True:
            if len(self.buffer) >= 2:
                n, offset = self.buffer[1] & 0x7F, 2
                if n == 126 and len(self.buffer) >= 4:
                    n, offset = struct.unpack("!H", self.buffer[2:4])[0], 4
                if n < 127 and len(self.buffer) >= offset + n:
                    opcode, payload = self.buffer[0] & 0x0F, self.buffer[offset:offset + n]
                    self.buffer = self.buffer[offset + n:]
                    return opcode, payload
            chunk = self.sock.recv(4096)
            assert chunk, "the broker closed the connection"
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def round_trip(sub: Client, pub: Client, qos: int) -> None:
    topic = unique("ws")
    assert sub.subscribe(topic, qos) == qos
    pub.publish(topic, f"qos {qos} over ws".encode(), qos=qos)
    m = sub.get()
    assert (m.topic, m.payload, m.qos) == (topic, f"qos {qos} over ws".encode(), qos)


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_paho_over_websockets_at_each_qos(ws_target, ws_client, qos):
    round_trip(ws_client(ws_target), ws_client(ws_target), qos)


def test_retained_message_reaches_a_later_websocket_subscriber(ws_target, ws_client):
    broker = ws_target
    topic = unique("ws-retained")
    ws_client(broker).publish(topic, b"kept", qos=1, retain=True)
    late = ws_client(broker)
    assert late.subscribe(topic, 1) == 1
    m = late.get()
    assert (m.payload, m.retain) == (b"kept", True)


@pytest.mark.parametrize("ending", ["socket closed", "websocket close frame"])
def test_will_of_a_websocket_client_that_leaves_without_disconnect(ws_target, client_factory, ending):
    broker = ws_target
    topic = unique("ws-will")
    watcher = client_factory(broker)  # over TCP
    assert watcher.subscribe(topic, 1) == 1
    raw = RawWebSocket(broker.ws_port)
    assert raw.status == 101
    username, password = broker.login or (None, None)
    raw.send_frame(0x2, mqtt_raw.connect(unique("ws-dying").replace("/", "-"), will=(topic, b"gone", 1, False),
                                         username=username, password=password and password.encode()))
    assert raw.recv_frame() == (0x2, b"\x20\x02\x00\x00")  # CONNACK accepted, in a binary frame
    if ending == "websocket close frame":
        raw.send_frame(0x8, struct.pack("!H", 1000))
        assert raw.recv_frame() == (0x8, struct.pack("!H", 1000))
    raw.close()
    m = watcher.get()
    assert (m.topic, m.payload) == (topic, b"gone")


def test_disconnect_publishes_no_will(ws_target, ws_client, client_factory):
    broker = ws_target
    topic = unique("ws-will")
    watcher = client_factory(broker)
    assert watcher.subscribe(topic, 1) == 1
    ws_client(broker, will=(topic, b"gone", 1, False)).disconnect()
    watcher.no_message(0.5)


def test_persistent_session_over_websockets_gets_what_came_while_away(ws_target, ws_client, client_factory):
    broker = ws_target
    topic, client_id = unique("ws-session"), unique("ws-sess").replace("/", "-")
    first = ws_client(broker, client_id=client_id, clean=False)
    assert first.subscribe(topic, 1) == 1
    first.disconnect()
    client_factory(broker).publish(topic, b"while you were away", qos=1)  # over TCP
    back = ws_client(broker, client_id=client_id, clean=False)
    assert back.session_present
    assert back.get().payload == b"while you were away"


def test_websocket_and_tcp_clients_talk_both_ways(ws_target, ws_client, client_factory):
    broker = ws_target
    browser, terminal = ws_client(broker), client_factory(broker)
    to_browser, to_terminal = unique("to-ws"), unique("to-tcp")
    assert browser.subscribe(to_browser, 1) == 1
    assert terminal.subscribe(to_terminal, 1) == 1
    mosquitto_pub(broker, to_browser, "from mosquitto_pub over tcp", qos=1)
    assert browser.get().payload == b"from mosquitto_pub over tcp"
    browser.publish(to_terminal, b"from the browser", qos=1)
    assert terminal.get().payload == b"from the browser"


def test_password_file_applies_to_websocket_clients(tmp_path, ws_broker):
    passwd = tmp_path / "passwd"
    make_passwd_with_mosquitto(passwd, [("ann", "secret")])
    broker = ws_broker(password_file=passwd)
    refused = Client(broker.ws_port, transport="websockets")
    refused.c.username_pw_set("ann", "wrong")
    refused.c.connect("127.0.0.1", broker.ws_port, keepalive=10)
    refused.c.loop_start()
    try:
        assert refused.connected.wait(WAIT)
        assert refused.connack[1] != 0
    finally:
        refused.stop()
    allowed = Client(broker.ws_port, transport="websockets")
    allowed.c.username_pw_set("ann", "secret")
    try:
        allowed.connect()
    finally:
        allowed.stop()


def test_http_dir_serves_the_page_beside_mqtt(tmp_path, ws_broker, ws_client):
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<title>chat</title>\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    broker = ws_broker(http_dir=web)
    base = f"http://127.0.0.1:{broker.ws_port}"
    with urllib.request.urlopen(f"{base}/?room=lobby&name=ann", timeout=WAIT) as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert r.read() == b"<title>chat</title>\n"
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{base}/nothing.js", timeout=WAIT)
    assert missing.value.code == 404
    with socket.create_connection(("127.0.0.1", broker.ws_port), timeout=WAIT) as s:
        s.sendall(b"GET /%2e%2e/secret.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 403") and b"top secret" not in answer
    round_trip(ws_client(broker), ws_client(broker), 1)  # the same port still speaks MQTT


# --------------------------------------------------------------------------- wss

@pytest.fixture(scope="module")
def ws_pki(tmp_path_factory) -> Path:
    return make_certs(tmp_path_factory.mktemp("ws-pki"), "alice")


class WSSBroker(Broker):
    """Our broker with a plain TCP listener and a WebSockets-over-TLS one with the suite's test certificates."""

    def __init__(self, tmp: Path, pki: Path, listener_options: dict, options: dict):
        self.pki = pki
        self.listener_options = listener_options
        super().__init__("mqttchat", tmp, {"websockets": True, **options})

    def websocket_listener_lines(self) -> list[str]:
        return super().websocket_listener_lines() + [
            f"certfile {self.pki / 'server.crt'}", f"keyfile {self.pki / 'server.key'}"
        ] + [f"{k} {v}" for k, v in self.listener_options.items()]


@pytest.fixture
def wss_broker(tmp_path, request, ws_pki):
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")

    def make(index: int, listener_options: dict | None = None, **options) -> WSSBroker:
        """listener_options go after the wss listener line (cafile, require_certificate, ...), options before."""
        d = tmp_path / f"wss{index}"
        d.mkdir()
        return WSSBroker(d, ws_pki, listener_options or {}, options)

    yield from managed_brokers(request, make)


def test_paho_over_wss(wss_broker, ws_pki):
    broker = wss_broker()
    clients = []
    try:
        for _ in range(2):
            c = Client(broker.ws_port, transport="websockets")
            c.c.tls_set(ca_certs=str(ws_pki / "ca.crt"))
            clients.append(c.connect())
        round_trip(clients[0], clients[1], 1)
    finally:
        for c in clients:
            c.stop()


def test_plain_websocket_on_the_wss_port_is_refused(wss_broker):
    broker = wss_broker()
    with pytest.raises((AssertionError, OSError)):
        RawWebSocket(broker.ws_port).recv_frame()
    with socket.create_connection(("127.0.0.1", broker.ws_port), timeout=WAIT) as plain:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with context.wrap_socket(plain) as tls:  # the port itself is alive and speaks TLS
            assert tls.version() is not None


def test_wss_certificate_identity_reaches_the_connection(wss_broker, ws_pki, tmp_path):
    """use_identity_as_username on a wss listener: the CN arrives during the TLS handshake, before the HTTP upgrade,
    and must still be the MQTT connection's user name (the ACL only lets user alice at users/alice/#)."""
    acl = tmp_path / "acl"
    acl.write_text("pattern readwrite users/%u/#\n")
    broker = wss_broker({"cafile": ws_pki / "ca.crt", "require_certificate": "true",
                         "use_identity_as_username": "true"}, acl_file=acl)
    alice = Client(broker.ws_port, transport="websockets")
    alice.c.tls_set(ca_certs=str(ws_pki / "ca.crt"), certfile=str(ws_pki / "alice.crt"),
                    keyfile=str(ws_pki / "alice.key"))
    try:
        alice.connect()
        assert alice.subscribe("users/alice/#", 1) == 1
        assert alice.subscribe("users/bob/#", 1) == 0x80
        alice.publish("users/alice/inbox", b"mine", qos=1)
        assert alice.get().payload == b"mine"
    finally:
        alice.stop()
