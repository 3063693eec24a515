"""Both socket engines of our broker with one loop (mqttchat only: `socket_engine` is our key).

`socket_engine auto` serves plain-TCP sockets on the broker's own epoll loop with plain system calls; `nio`
serves them with SwiftNIO. What SwiftNIO did for the broker, its own loop must do too: subscribers that
vanish while output streams to them (mid-write, with a reset or a close) cost only themselves. The broker
stays up, serves a bystander, and goes idle afterwards: a closed socket left in the loop's set would keep
reporting itself and spin it.
"""

import socket
import struct
import time

import pytest

import mqtt_raw as raw
import os
from conftest import Broker, Client, mqttchat_bin, unique

ENGINES = ["auto", "nio"]


@pytest.fixture(params=ENGINES)
def one_loop_broker(request, tmp_path):
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")
    b = Broker("mqttchat", tmp_path, {"threads": 1, "socket_engine": request.param, "sys_interval": 0})
    b.start()
    yield b
    b.stop()


def vanishing_subscriber(port: int, topic: str) -> raw.RawClient:
    """A subscriber with a small receive buffer that never reads what it subscribed to."""
    c = raw.RawClient(port)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert c.connect_ok(unique("vanish")) is False  # a clean session
    assert c.subscribe([(topic, 0)]) == [0]
    return c


def test_subscribers_that_vanish_mid_stream_cost_only_themselves(one_loop_broker):
    b = one_loop_broker
    topic = unique("stream")
    steady = Client(b.port).connect()
    marker_topic = unique("steady")
    steady.subscribe(marker_topic, 1)
    payload = b"x" * 512
    for round_number in range(3):
        crowd = [vanishing_subscriber(b.port, topic) for _ in range(12)]
        with raw.RawClient(b.port) as publisher:
            assert publisher.connect_ok(unique("flood")) is False
            # About 1 MB for each subscriber: far more than its socket holds, so the broker is mid-write when
            # they go.
            burst = raw.publish(topic, payload) * 2000
            publisher.send(burst)
            time.sleep(0.05)
            for index, c in enumerate(crowd):
                if index % 2 == 0:  # a reset
                    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
            publisher.send(burst)  # written to sockets that are gone: EPIPE, not SIGPIPE
            time.sleep(0.2)
        assert b.alive(), f"broker process died in round {round_number}: {b.output()[-2000:]}"
        steady.publish(marker_topic, f"after round {round_number}", 1)
        assert steady.get().payload == f"after round {round_number}".encode()
    time.sleep(0.3)
    busy = cpu_seconds(b.proc.pid)
    time.sleep(1.0)
    busy = cpu_seconds(b.proc.pid) - busy
    assert busy < 0.3, f"the idle broker used {busy:.2f} s of CPU in 1 s"
    steady.disconnect()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_broker_ignores_sigpipe_once_it_serves_a_client(one_loop_broker):
    """A write to a socket whose client is gone fails with EPIPE; unless SIGPIPE is ignored, the same write
    ends the process. The broker's own loop stops writing at a socket's first error, so a test cannot count
    on provoking that write: it reads the process's ignored-signal mask instead."""
    b = one_loop_broker
    with raw.RawClient(b.port) as c:
        assert c.connect_ok(unique("pipe")) is False
        with open(f"/proc/{b.proc.pid}/status") as f:
            ignored = int(next(line for line in f if line.startswith("SigIgn:")).split()[1], 16)
        assert ignored & (1 << (13 - 1)), f"SIGPIPE is not ignored (SigIgn {ignored:#x})"
