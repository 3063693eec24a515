"""The latency floors `docs/benchmarks.md` compares the broker with: `NIORelayFloor` (a forwarder on SwiftNIO)
and `EpollRelayFloor` (the same forwarder on an epoll loop of its own). The load generator's pairs run goes
through each at QoS 0 and 1 (through NIORelayFloor also with the broker's three ways of writing), losing
nothing; a malformed remaining length closes only that connection.

The relays are built by the Benchmarks package (`swift build --package-path Benchmarks`); MQTTCHAT_BENCH_BIN_DIR
names its bin directory (scripts/test.sh sets it to `swift build --package-path Benchmarks --show-bin-path`).
Skipped without it; the pairs runs also without MQTTCHAT_BIN (their load generator)."""
import json
import os
import socket
import subprocess
import time

import pytest

from conftest import free_port, mqttchat_bin
import mqtt_raw as raw


RELAYS = ["NIORelayFloor", "EpollRelayFloor"]


def relay_binary(name: str) -> str:
    """The path of relay `name` in MQTTCHAT_BENCH_BIN_DIR; skips the test with the reason when it is not there."""
    bin_dir = os.environ.get("MQTTCHAT_BENCH_BIN_DIR")
    if not bin_dir:
        pytest.skip("MQTTCHAT_BENCH_BIN_DIR is unset: set it to "
                    "$(swift build --package-path Benchmarks --show-bin-path) after building the Benchmarks package")
    relay = os.path.join(bin_dir, name)
    if not os.path.isfile(relay):
        pytest.skip(f"{name} is not in MQTTCHAT_BENCH_BIN_DIR={bin_dir}: "
                    "build it with `swift build --package-path Benchmarks`")
    return relay


@pytest.fixture
def start_relay():
    processes = []

    def start(name: str, *options: str) -> int:
        relay = relay_binary(name)
        port = free_port()
        process = subprocess.Popen([relay, *options, str(port)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        processes.append(process)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert process.poll() is None, "the relay exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.05)
        pytest.fail("the relay did not listen within 10 s")

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.mark.parametrize("relay, options", [("NIORelayFloor", ()),
                                            ("NIORelayFloor", ("--coalesce", "--defer-acks", "--watermark")),
                                            ("EpollRelayFloor", ())],
                         ids=["nio-plain", "nio-broker-writes", "epoll"])
@pytest.mark.parametrize("qos", [0, 1])
def test_pairs_go_through_the_relay(start_relay, relay, options, qos):
    if not mqttchat_bin():
        pytest.skip("MQTTCHAT_BIN is unset: the load goes through `mqttchat bench`")
    port = start_relay(relay, *options)
    r = subprocess.run([mqttchat_bin(), "bench", "--port", str(port), "--scenario", "pairs", "--publishers", "4",
                        "--subscribers", "4", "--qos", str(qos), "--rate", "2000", "--duration", "1",
                        "--timeout", "20", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["published"] >= 1000, result
    assert result["delivered"] == result["published"], result
    assert result["lost"] == 0 and result["duplicates"] == 0, result
    assert result["latency"]["p50Micros"] > 0, result


@pytest.mark.parametrize("relay", RELAYS)
def test_malformed_length_closes_only_that_connection(start_relay, relay):
    port = start_relay(relay)
    bystander = socket.create_connection(("127.0.0.1", port), timeout=5)
    bad = socket.create_connection(("127.0.0.1", port), timeout=5)
    bad.sendall(b"\x30\xff\xff\xff\xff\x01")  # a fifth remaining-length byte
    assert bad.recv(16) == b"", "the connection with the malformed length stayed open"
    bystander.sendall(raw.connect("bystander", True, 60))
    assert bystander.recv(4) == b"\x20\x02\x00\x00"
    bad.close()
    bystander.close()
