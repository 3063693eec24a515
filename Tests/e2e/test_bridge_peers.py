"""MQTT bridges of our broker against peers of other kinds (docs/bridges.md): the ejabberd node, mosquitto
bridging to us (try_private), a TLS listener with client certificates, password files on both sides, and a fake
remote that sends a malformed packet. Every wait is bounded; no test asserts a duration."""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from bridge_helpers import AuthBridged, bridge_lines, brokers, clients, drain, pki, settle, wait_state  # noqa: F401 (fixtures)
from conftest import Broker, Client, free_port, mqttchat_bin

pytestmark = [
    pytest.mark.skipif(mqttchat_bin() is None, reason="MQTTCHAT_BIN is unset: these tests need our broker"),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="mosquitto is not installed"),
]


@pytest.mark.parametrize("try_private", ["false", "true"])
def test_bridge_to_ejabberd(ejabberd_peer, brokers, clients, try_private):
    """ejabberd's mod_mqtt as the remote: its anonymous login wants a user name and password, and it refuses
    try_private's protocol level 0x84 with CONNACK 1 (unacceptable protocol version). The bridge then connects to
    that address as a plain 3.1.1 client, so both settings end up bridging."""
    login = ejabberd_peer.login
    ours = brokers("mqttchat", bridge_lines([ejabberd_peer.port], [
        "ej/out/# out 1", "ej/in/# in 1"],
        extra=[f"try_private {try_private}", f"remote_username {login[0]}", f"remote_password {login[1]}"]))
    wait_state(ours, clients, b"1")
    remote_sub = Client(ejabberd_peer.port, login=login)
    remote_sub.connect()
    try:
        remote_sub.subscribe("ej/out/#", 1)
        local_sub = clients(ours)
        local_sub.subscribe("ej/in/#", 1)
        remote_pub = Client(ejabberd_peer.port, login=login)
        remote_pub.connect()
        try:
            settle(lambda: remote_pub.publish("ej/in/probe", b"p", 1), local_sub, lambda m: m.topic == "ej/in/probe")
        finally:
            remote_pub.stop()
        clients(ours).publish("ej/out/x", b"to-ejabberd", 1)
        assert remote_sub.get(10).payload == b"to-ejabberd"
    finally:
        remote_sub.stop()


def test_incoming_mosquitto_bridge_gets_no_echo(brokers, clients):
    """mosquitto bridging to us with try_private (level 0x84) and `both` on one topic: we accept the bridge and
    do not send its own messages back, so each message reaches each side once."""
    ours = brokers("mqttchat")
    remote = brokers("mosquitto", lines=[
        "connection tous", f"address 127.0.0.1:{ours.port}", "topic echo/# both 1", "try_private true",
        "cleansession true", "restart_timeout 1", "notifications false"])
    local_sub, remote_sub = clients(ours), clients(remote)
    local_sub.subscribe("echo/#", 1)
    remote_sub.subscribe("echo/#", 1)
    remote_pub = clients(remote)
    settle(lambda: remote_pub.publish("echo/probe", b"p", 1), local_sub, lambda m: m.topic == "echo/probe")
    drain(remote_sub)
    clients(ours).publish("echo/x", b"once", 1)
    assert local_sub.get().payload == b"once"
    assert remote_sub.get().payload == b"once"
    local_sub.no_message(1.5)
    remote_sub.no_message(0.5)
    remote_pub.publish("echo/y", b"twice?", 1)
    assert remote_sub.get().payload == b"twice?"
    assert local_sub.get().payload == b"twice?"
    remote_sub.no_message(1.5)
    local_sub.no_message(0.5)


def test_tls_to_a_mosquitto_tls_listener(brokers, clients, pki):
    tls_port = free_port()
    remote = brokers("mosquitto", lines=[
        "user root",  # as root mosquitto drops privileges before reading the key
        f"listener {tls_port} 127.0.0.1", f"certfile {pki / 'server.crt'}", f"keyfile {pki / 'server.key'}",
        f"cafile {pki / 'ca.crt'}", "require_certificate true"])
    ours = brokers("mqttchat", bridge_lines([tls_port], ["sec/# both 1"], extra=[
        f"bridge_cafile {pki / 'ca.crt'}", f"bridge_certfile {pki / 'bridge.crt'}",
        f"bridge_keyfile {pki / 'bridge.key'}"]))
    wait_state(ours, clients, b"1")
    remote_sub, local_sub = clients(remote), clients(ours)
    remote_sub.subscribe("sec/#", 1)
    local_sub.subscribe("sec/#", 1)
    settle(lambda: clients(remote).publish("sec/probe", b"p", 1), local_sub, lambda m: m.topic == "sec/probe")
    clients(ours).publish("sec/x", b"over-tls", 1)
    got = [remote_sub.get().payload for _ in range(2)]
    assert b"over-tls" in got


def test_malformed_packet_from_the_remote_closes_only_the_bridge(brokers, clients):
    """A fake remote that answers CONNACK and then a packet of the reserved type 15: the bridge drops that
    connection and reconnects (with backoff), and the broker keeps serving its clients."""
    import socket as sockets
    listener = sockets.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[int] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(1024)  # CONNECT
                    conn.sendall(bytes([0x20, 0x02, 0x00, 0x00, 0xF0, 0x00]))
                    accepted.append(1)
                    conn.recv(1024)  # until the bridge closes (or the timeout)
                except OSError:
                    pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        ours = brokers("mqttchat", bridge_lines([port], ["bad/# both 1"]))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(accepted) < 2:
            time.sleep(0.1)
        assert len(accepted) >= 2, "the bridge did not reconnect after the malformed packet"
        a, b = clients(ours), clients(ours)
        b.subscribe("ok/#", 1)
        a.publish("ok/x", b"still-serving", 1)
        assert b.get().payload == b"still-serving"
        assert "malformed packet from the remote" in ours.output()
    finally:
        stop.set()
        server.join(5)
        listener.close()


def test_authentication_on_both_sides(tmp_path, clients, request):
    """The remote wants remote_username/remote_password; our own broker refuses anonymous clients, and the bridge's
    local side (the broker itself) is not asked for a password, as in mosquitto."""
    from conftest import make_passwd_with_mosquitto
    passwd = tmp_path / "passwd"
    make_passwd_with_mosquitto(passwd, [("edge", "edge-secret"), ("user", "user-secret")])
    passwd.chmod(0o644)
    made: list[Broker] = []
    try:
        remote = AuthBridged("mosquitto", tmp_path, {"password_file": passwd}, [])
        made.append(remote)
        remote.start()
        ours_dir = tmp_path / "ours"
        ours_dir.mkdir()
        ours = AuthBridged("mqttchat", ours_dir, {"password_file": passwd}, bridge_lines(
            [remote.port], ["auth/# both 1"], extra=["remote_username edge", "remote_password edge-secret"]))
        made.append(ours)
        ours.start()
        login = ("user", "user-secret")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            probe = clients(ours, login=login)
            probe.subscribe("$SYS/broker/connection/+/state", 0)
            try:
                if probe.get(2.0).payload == b"1":
                    break
            except AssertionError:
                pass
            time.sleep(0.2)
        else:
            raise AssertionError("the bridge never connected")
        remote_sub = clients(remote, login=login)
        remote_sub.subscribe("auth/#", 1)
        clients(ours, login=login).publish("auth/x", b"authenticated", 1)
        assert remote_sub.get().payload == b"authenticated"
    finally:
        failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
        for b in made:
            b.stop()
            if failed:
                print(f"\n===== {b.kind} =====\n{b.config_text()}\n{b.output()[-4000:]}")
