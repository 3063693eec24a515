"""Parking idle connections (issue 6, mqttchat only: `park_idle_connections_after_ms` is our key).

A connection quiet for the parking delay gives up its SwiftNIO channel until the client sends something or
something is written to it. Third-party clients must not notice: paho subscribers parked between messages get
QoS 0, 1 and 2 messages from mosquitto_pub exactly once, and a paho client whose only traffic is its own
keepalive pings stays connected through many parkings. `$SYS/broker/clients/parked` and `clients/parkings`
show that the connections really parked.
"""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

import mqtt_raw as raw
from conftest import Broker, Client, FileLimitBroker, mqttchat_bin, sys_values, unique, wait_sys

PARK_MS = 150


PARKED = "$SYS/broker/clients/parked"
PARKINGS = "$SYS/broker/clients/parkings"
PARKING_TOPICS = {PARKED, PARKINGS}


def parking_values(port: int) -> dict[str, str]:
    """clients/parked and clients/parkings, as computed at the last $SYS publish (1 s at most ago)."""
    return sys_values(port, PARKING_TOPICS)


def wait_parked(port: int, at_least: int) -> dict[str, str]:
    return wait_sys(port, PARKED, lambda parked: parked >= at_least, wanted=PARKING_TOPICS)


@pytest.fixture
def parking_broker(tmp_path):
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")
    # Parking gives up SwiftNIO channels: SwiftNIO serves the sockets even where the broker has one loop (and
    # would serve them on its own epoll loop, which parks nothing).
    b = Broker("mqttchat", tmp_path,
               {"park_idle_connections_after_ms": PARK_MS, "sys_interval": 1, "socket_engine": "nio"})
    b.start()
    yield b
    b.stop()


def test_parked_paho_subscribers_get_every_qos_from_mosquitto_pub(parking_broker):
    topic = unique("park/room")
    subscribers = [Client(parking_broker.port).connect() for _ in range(5)]
    try:
        for s in subscribers:
            assert s.subscribe(topic, 2) == 2
        wait_parked(parking_broker.port, 5)
        for qos in (0, 1, 2):
            time.sleep(3 * PARK_MS / 1000)  # every subscriber parks again before each message
            subprocess.run(["mosquitto_pub", "-p", str(parking_broker.port), "-t", topic, "-q", str(qos),
                            "-m", f"qos{qos}"], check=True, timeout=10)
        for s in subscribers:
            got = [m.payload.decode() for m in s.get_n(3)]
            assert got == ["qos0", "qos1", "qos2"]
            s.no_message(0.3)  # nothing twice
        values = parking_values(parking_broker.port)
        assert int(values[PARKINGS]) >= 15, values
    finally:
        for s in subscribers:
            s.stop()


def test_a_paho_client_that_only_pings_stays_connected_while_parking(parking_broker):
    client = Client(parking_broker.port, keepalive=1).connect()
    try:
        wait_parked(parking_broker.port, 1)
        before = int(parking_values(parking_broker.port)[PARKINGS])
        time.sleep(4)  # paho pings every second; each ping brings the connection back, then it parks again
        assert not client.disconnected.is_set()
        after = int(parking_values(parking_broker.port)[PARKINGS])
        assert after - before >= 3, (before, after)
        topic = unique("park/still")
        assert client.subscribe(topic, 1) == 1
        client.publish(topic, b"still here", qos=1)
        assert client.get().payload == b"still here"
    finally:
        client.stop()


def _connack_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(4) == b"\x20\x02\x00\x00"
    except OSError:
        return False


def test_running_out_of_descriptors_pauses_accepting_and_recovers(tmp_path):
    """The broker accepts plain-TCP sockets itself (to be able to park them). With a soft limit of 64 open
    files, 100 clients cannot all be accepted: accepting pauses (logged) instead of spinning or failing, the
    clients already connected keep working, and once descriptors are free again new clients connect."""
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")
    broker = FileLimitBroker(tmp_path, {"park_idle_connections_after_ms": PARK_MS}, files=64)
    broker.start()
    crowd: list[socket.socket] = []
    try:
        first = raw.RawClient(broker.port)
        first.connect_ok(unique("first"))
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)  # the kernel's backlog takes it
            s.sendall(raw.connect("", True, 30))
            crowd.append(s)
        answered = sum(1 for s in crowd if _connack_within(s, 0.2))
        assert answered < 100, "the descriptor limit was never reached"
        assert "accept failed" in broker.output()
        topic = unique("park/limit")
        assert first.subscribe([(topic, 0)]) == [0]  # an accepted client is still served
        for s in crowd:
            s.close()
        crowd.clear()
        deadline = time.monotonic() + 10
        while True:
            try:
                with raw.RawClient(broker.port) as late:
                    late.connect_ok(unique("late"))
                    break
            except (OSError, AssertionError, TimeoutError):
                assert time.monotonic() < deadline, "no client could connect after descriptors were freed"
                time.sleep(0.5)
        assert broker.alive()
        first.close()
    finally:
        for s in crowd:
            s.close()
        broker.stop()


def test_a_parked_connection_is_logged_with_its_address(parking_broker):
    """The client's address lived in the NIO channel a parked connection gave up; the broker keeps it, so the
    log line of a parked client whose keepalive expires still says where it was."""
    c = raw.RawClient(parking_broker.port)
    try:
        local_port = c.sock.getsockname()[1]
        c.connect_ok(unique("quiet"), keepalive=2)
        wait_parked(parking_broker.port, 1)
        assert c.closed_within(6), "keepalive 2 s: closed after 3 s of silence"
        lines = [line for line in parking_broker.output().splitlines() if "connection closed" in line]
        assert lines, parking_broker.output()
        assert f":{local_port}" in lines[-1] and "remote=" in lines[-1], lines[-1]
    finally:
        c.close()
