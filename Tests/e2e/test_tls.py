"""TLS listeners (certfile, keyfile, cafile, require_certificate, use_identity_as_username,
tls_version) against mosquitto 2.0.11 and our broker, with paho-mqtt, mosquitto_pub/sub and raw
sockets. The certificates are made per test session by scripts/make-test-certs.sh (a throwaway CA,
a server certificate for 127.0.0.1/localhost and client certificates) and never committed."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

import mqtt_raw
from test_auth import make_passwd_with_mosquitto
from conftest import MQTTCHAT_ONLY_LINES, WAIT, Broker, Client, SubProcess, managed_brokers, mosquitto_pub, unique

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make-test-certs.sh"
SUBACK_FAILURE = 0x80


def make_certs(directory: Path, *clients: str, ca_name: str | None = None) -> Path:
    env = dict(os.environ)
    if ca_name:
        env["CA_NAME"] = ca_name
    subprocess.run(["sh", str(SCRIPT), str(directory), *clients], check=True, capture_output=True,
                   timeout=60, env=env)
    return directory


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """ca.crt, server.crt/key and client certificates alice.crt/key, bob.crt/key."""
    return make_certs(tmp_path_factory.mktemp("pki"), "alice", "bob")


@pytest.fixture(scope="module")
def foreign_pki(tmp_path_factory) -> Path:
    """Another CA with its own client certificate (mallory), unknown to the broker."""
    return make_certs(tmp_path_factory.mktemp("foreign"), "mallory", ca_name="some other CA")


class TLSBroker(Broker):
    """A broker whose one listener serves TLS with the session's certificates; `options` are
    written after the listener line (TLS options belong to the listener they follow)."""

    def __init__(self, kind: str, tmp: Path, options: dict, pki: Path):
        self.pki = pki
        super().__init__(kind, tmp, options)

    def config_text(self) -> str:
        lines = []
        if self.kind == "mosquitto" and os.geteuid() == 0:
            lines.append("user root")  # mosquitto drops privileges before reading the ACL file
        if self.kind == "mqttchat":
            lines += MQTTCHAT_ONLY_LINES
        lines += ["log_dest stdout", "allow_anonymous true", f"listener {self.port} 127.0.0.1",
                  f"certfile {self.pki / 'server.crt'}", f"keyfile {self.pki / 'server.key'}"]
        lines += [f"{k} {v}" for k, v in self.options.items() if k != "sys_interval"]
        return "\n".join(lines) + "\n"


@pytest.fixture
def tls_broker(broker_kind, tmp_path, request, pki):
    """tls_broker(acl=TEXT, **options) -> a running TLSBroker (stopped at teardown)."""

    def make(index: int, acl: str | None = None, **options) -> TLSBroker:
        d = tmp_path / f"tls{index}"
        d.mkdir()
        if acl is not None:
            (d / "acl").write_text(acl)
            options["acl_file"] = d / "acl"
        return TLSBroker(broker_kind, d, options, pki)

    yield from managed_brokers(request, make)


@pytest.fixture
def tls_client(pki):
    """tls_client(broker, ca=None, cert=None, cert_dir=None, username=None, connect=True) -> a paho
    Client over TLS that trusts `ca` (default: the session CA) and presents the client certificate
    `cert` from `cert_dir` (default: the session PKI), if given."""
    made: list[Client] = []

    def factory(broker: Broker, ca: Path | None = None, cert: str | None = None,
                cert_dir: Path | None = None, username: str | None = None, connect: bool = True) -> Client:
        c = Client(broker.port)
        made.append(c)
        cert_dir = cert_dir or pki
        c.c.tls_set(ca_certs=str(ca or pki / "ca.crt"),
                    certfile=str(cert_dir / f"{cert}.crt") if cert else None,
                    keyfile=str(cert_dir / f"{cert}.key") if cert else None)
        if username is not None:
            c.c.username_pw_set(username)
        return c.connect() if connect else c

    yield factory
    for c in made:
        c.stop()


def tls_refused(client: Client) -> str:
    """Connects expecting the broker to refuse the TLS handshake: either the handshake raises at
    once, or (TLS 1.3, where the server checks the client certificate after the client has
    finished) the connection drops before any CONNACK. Returns how it failed."""
    try:
        client.c.connect("127.0.0.1", client.port, keepalive=10)
    except (ssl.SSLError, OSError) as e:
        return f"handshake: {e}"
    client.c.loop_start()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if client.connected.is_set():
            raise AssertionError(f"TLS connect was accepted with CONNACK {client.connack}")
        if client.disconnected.is_set():
            return "dropped before CONNACK"
        time.sleep(0.01)
    raise AssertionError("neither refused nor accepted within the wait")


def round_trip(client: Client, topic: str) -> None:
    assert client.subscribe(topic, 1) == 1
    client.publish(topic, b"over tls", qos=1)
    assert client.get().payload == b"over tls"


# --------------------------------------------------------------------------- server TLS only

def test_paho_round_trip_over_tls(tls_broker, tls_client):
    broker = tls_broker()
    round_trip(tls_client(broker), unique("tls"))


def test_mosquitto_sub_and_pub_with_cafile(tls_broker, pki):
    broker = tls_broker()
    topic = unique("tls")
    cafile = ["--cafile", str(pki / "ca.crt")]
    sub = SubProcess(broker, topic, count=1, qos=1, extra=cafile)
    try:
        sub.wait_subscribed()
        mosquitto_pub(broker, topic, "hello tls", qos=1, extra=cafile)
        assert sub.result() == [(topic, 1, 0, "hello tls")]
    finally:
        sub.kill()


def test_wrong_ca_fails_and_the_broker_keeps_serving(tls_broker, tls_client, foreign_pki, broker_kind):
    broker = tls_broker()
    bad = tls_client(broker, ca=foreign_pki / "ca.crt", connect=False)
    with pytest.raises(ssl.SSLError):
        bad.c.connect("127.0.0.1", broker.port, keepalive=10)
    round_trip(tls_client(broker), unique("tls"))
    assert broker.alive()


def test_plain_mqtt_on_the_tls_port_is_closed_and_others_are_served(tls_broker, tls_client, broker_kind):
    broker = tls_broker()
    good = tls_client(broker)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as s:
        plain_port = s.getsockname()[1]
        s.sendall(mqtt_raw.connect("plain-on-tls"))
        received = b""
        deadline = time.monotonic() + WAIT
        closed = False
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(4096)
            except (ConnectionResetError, BrokenPipeError):
                closed = True
                break
            if not chunk:
                closed = True
                break
            received += chunk
        assert closed, "the broker kept a plain-TCP client on its TLS port open"
        assert not received.startswith(b"\x20\x02"), "a plain client got a CONNACK on a TLS port"
    round_trip(good, unique("tls"))
    if broker_kind == "mqttchat":
        def logged() -> bool:
            return any("TLS handshake failed" in line and f":{plain_port}" in line
                       for line in broker.output().splitlines())
        deadline = time.monotonic() + WAIT
        while not logged() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert logged(), "the failed handshake was not logged at notice with the client's address"


def test_silent_client_on_the_tls_port_is_closed_by_the_connect_timeout(tls_broker, broker_kind):
    if broker_kind == "mosquitto":
        pytest.skip("mosquitto has no connect timeout for a client that never starts the handshake")
    broker = tls_broker()  # connect_timeout 2 (MQTTCHAT_ONLY_LINES)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as s:
        start = time.monotonic()
        s.settimeout(6)
        try:
            closed = s.recv(4096) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        elapsed = time.monotonic() - start
        assert closed, "still open (or sent data) after 6 s"
        assert 1.5 <= elapsed <= 5, f"closed after {elapsed:.1f} s, connect_timeout is 2 s"


def test_tls_version_tlsv1_3_refuses_a_tls_1_2_client(tls_broker, pki, tls_client):
    broker = tls_broker(tls_version="tlsv1.3")
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as raw:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(raw, server_hostname="127.0.0.1")
    context13 = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as raw:
        with context13.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() == "TLSv1.3"
    round_trip(tls_client(broker), unique("tls"))


# --------------------------------------------------------------------------- client certificates

def test_require_certificate_refuses_a_client_without_one(tls_broker, tls_client, pki, foreign_pki):
    broker = tls_broker(cafile=pki / "ca.crt", require_certificate="true")
    print(tls_refused(tls_client(broker, connect=False)))
    # A certificate from another CA is refused as well (trusting the broker is not enough).
    print(tls_refused(tls_client(broker, connect=False, cert="mallory", cert_dir=foreign_pki)))
    round_trip(tls_client(broker, cert="alice"), unique("mtls"))


def test_require_certificate_with_mosquitto_clients(tls_broker, pki):
    broker = tls_broker(cafile=pki / "ca.crt", require_certificate="true")
    base = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "mqttv311",
            "-t", unique("mtls"), "-m", "x", "-q", "1", "--cafile", str(pki / "ca.crt")]
    without = subprocess.run(base, capture_output=True, timeout=15, text=True)
    assert without.returncode != 0, "mosquitto_pub without a client certificate was accepted"
    with_cert = subprocess.run(base + ["--cert", str(pki / "alice.crt"), "--key", str(pki / "alice.key")],
                               capture_output=True, timeout=15, text=True)
    assert with_cert.returncode == 0, with_cert.stderr


def test_use_identity_as_username_feeds_the_acl(tls_broker, tls_client, pki, broker_kind, tmp_path):
    """The CN of the client certificate is the user name: CONNECT's user name is ignored, the
    password file is not consulted (it knows neither alice nor bob), and ACL %u sees the CN."""
    passwd = tmp_path / "passwd"
    make_passwd_with_mosquitto(passwd, [("carol", "secret")])
    broker = tls_broker(acl="pattern readwrite users/%u/#\n", password_file=passwd, allow_anonymous="false",
                        cafile=pki / "ca.crt", require_certificate="true", use_identity_as_username="true")
    # alice claims to be bob in CONNECT: the certificate wins, and %u is alice.
    alice = tls_client(broker, cert="alice", username="bob")
    round_trip(alice, "users/alice/inbox")
    bob = tls_client(broker, cert="bob")
    assert bob.subscribe("users/bob/#", 1) == 1
    # Ours refuses the filter; mosquitto grants every SUBSCRIBE and filters at delivery.
    assert alice.subscribe("users/bob/#", 1) == (SUBACK_FAILURE if broker_kind == "mqttchat" else 1)
    alice.publish("users/bob/inbox", b"from alice", qos=1)
    bob.no_message(0.5)
    bob.publish("users/bob/inbox", b"for bob", qos=1)
    assert bob.get().payload == b"for bob"
    alice.no_message(0.3)
