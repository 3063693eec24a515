"""Every case of hostile_corpus.py against both brokers, over real sockets.

For each case: a bystander (connected before, subscribed) publishes and receives while the hostile bytes
arrive and again afterwards; the hostile connection is closed by the broker within a bounded time (or,
for valid-but-abusive input, answered correctly or closed); and the broker process is still alive.

One broker and one bystander are shared per broker kind for the whole module (module-scoped overrides of
conftest's `broker_kind` and `broker`), so ~100 cases x 2 brokers cost one broker start each.
"""

from __future__ import annotations

import shutil
import socket
import time

import pytest

import mqtt_raw as raw
from conftest import BROKER_KINDS, Broker, Client, mqttchat_bin, unique
from hostile_corpus import ANSWER_OR_CLOSE, CASES, CLOSE, CLOSE_WITHIN, HostileCase


@pytest.fixture(scope="module", params=BROKER_KINDS)
def broker_kind(request) -> str:
    """Module-scoped twin of conftest's fixture (same skips), so that one broker serves every case."""
    if request.param == "mqttchat" and mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file: build mqttchat and export "
                    "MQTTCHAT_BIN=<path to the mqttchat executable>")
    if request.param == "mosquitto" and shutil.which("mosquitto") is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh installs it)")
    return request.param


@pytest.fixture(scope="module")
def broker(broker_kind, tmp_path_factory):
    b = Broker(broker_kind, tmp_path_factory.mktemp(f"hostile-{broker_kind}"), {})
    b.start()
    yield b
    b.stop()


class Bystander:
    """A paho client subscribed to its own topic before any hostile input; `check` round-trips one QoS 1
    message through the broker."""

    def __init__(self, broker: Broker):
        self.broker = broker
        self.client = Client(broker.port, keepalive=30).connect()
        self.topic = unique("hostile-bystander")
        assert self.client.subscribe(self.topic, 1) == 1
        self.count = 0
        self.check("initial")

    def check(self, when: str) -> None:
        assert self.broker.alive(), f"broker process died ({when})"
        self.count += 1
        payload = f"bystander {self.count} {when}".encode()
        self.client.publish(self.topic, payload, 1)
        message = self.client.get(timeout=3.0)
        assert message.payload == payload, f"bystander got {message.payload!r} ({when})"

    def stop(self) -> None:
        self.client.stop()


@pytest.fixture(scope="module")
def bystander(broker):
    b = Bystander(broker)
    yield b
    b.stop()


def _closed(client: raw.RawClient, within: float) -> tuple[bool, list[raw.Packet]]:
    """Reads until the broker closes the socket (EOF or reset) or `within` seconds pass; returns whether
    it closed and the packets received before."""
    received: list[raw.Packet] = []
    deadline = time.monotonic() + within
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False, received
        try:
            received.append(client.recv(remaining))
        except raw.Closed:
            return True, received
        except TimeoutError:
            return False, received
        except OSError:  # e.g. ECONNRESET surfacing as a plain OSError
            return True, received


def _send(client: raw.RawClient, data: bytes) -> None:
    """Sends everything; a broker that closes mid-write (reset, broken pipe) is fine, the close is checked
    afterwards."""
    try:
        client.send(data)
    except OSError:
        pass


def _run_close_case(case: HostileCase, client: raw.RawClient) -> None:
    closed, received = _closed(client, CLOSE_WITHIN)
    got = [(p.ptype, p.body) for p in received]
    expected = list(case.replies)
    matches = len(got) == len(expected) and all(
        gt == et and (eb is None or gb == eb) for (gt, gb), (et, eb) in zip(got, expected))
    assert matches, f"{case.name}: expected replies {expected} before the close, got {received}"
    assert closed, f"{case.name}: connection still open after {CLOSE_WITHIN}s ({case.spec})"


def _run_answer_case(case: HostileCase, client: raw.RawClient) -> None:
    assert case.answer is not None
    try:
        case.answer(client)
    except raw.Closed:
        return  # closing is an allowed answer to abuse
    except TimeoutError:
        pytest.fail(f"{case.name}: neither answered completely nor closed ({case.spec})")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case: HostileCase, broker, bystander, departure):
    if case.mosquitto_departure:
        departure("mosquitto", case.mosquitto_departure)
    data = case.payload()
    client = broker.raw()
    try:
        if case.connect_first:
            client.connect_ok(f"hostile-{case.name}"[:23])
        _send(client, data)
        if case.half_close:
            try:
                client.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        bystander.check(f"while {case.name}")
        if case.expect == CLOSE:
            _run_close_case(case, client)
        else:
            assert case.expect == ANSWER_OR_CLOSE
            _run_answer_case(case, client)
        bystander.check(f"after {case.name}")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n----- {broker.kind} output (tail) -----\n"
                             f"{broker.output()[-3000:]}") from None
    finally:
        client.close()


def test_corpus_is_large_and_documented():
    # The corpus is the point of this file: keep it at least 50 cases, each with its spec requirement.
    assert len(CASES) >= 50
    for case in CASES:
        assert case.spec.strip(), f"{case.name}: no spec note"
        assert case.expect in (CLOSE, ANSWER_OR_CLOSE)
        assert (case.answer is not None) == (case.expect == ANSWER_OR_CLOSE), case.name
