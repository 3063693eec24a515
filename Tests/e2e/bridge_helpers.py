"""Helpers of the bridge e2e tests (test_bridge.py, test_bridge_peers.py): brokers with bridge blocks, their
clients, and bounded waits for a bridge's state."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import Broker, Client


class Bridged(Broker):
    """A broker with extra configuration lines (a bridge block repeats `topic`, which an options dict cannot)."""

    def __init__(self, kind: str, tmp: Path, options: dict, lines: list[str], port: int | None = None):
        self.extra_lines = lines
        super().__init__(kind, tmp, options)
        if port is not None:
            self.port = port
            self.conf.write_text(self.config_text())

    def config_text(self) -> str:
        return super().config_text() + "\n".join(self.extra_lines) + "\n"


@pytest.fixture
def brokers(tmp_path, request):
    """brokers(kind, lines=[], start=True, port=None, **options) -> Broker; every one is stopped at teardown."""
    made: list[Broker] = []

    def factory(kind: str, lines: list[str] | None = None, start: bool = True, port: int | None = None,
                **options) -> Broker:
        d = tmp_path / f"{kind}{len(made)}"
        d.mkdir()
        b = Bridged(kind, d, options, lines or [], port)
        made.append(b)
        if start:
            b.start()
        return b

    yield factory
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for b in made:
        b.stop()
        if failed:
            print(f"\n===== {b.kind} config =====\n{b.config_text()}===== output =====\n{b.output()[-6000:]}")


@pytest.fixture
def clients():
    made: list[Client] = []

    def factory(broker: Broker, client_id: str | None = None, clean: bool = True, login=None) -> Client:
        c = Client(broker.port, client_id, clean, login=login)
        made.append(c)
        return c.connect()

    yield factory
    for c in made:
        c.stop()


class AuthBridged(Bridged):
    """No anonymous clients: a password file on the listener (and `user root` for mosquitto, which drops privileges
    before reading it)."""

    def config_text(self) -> str:
        lines = ["user root"] if self.kind == "mosquitto" else ["connect_timeout 2"]
        lines += ["log_dest stdout", f"listener {self.port} 127.0.0.1", "allow_anonymous false",
                  f"password_file {self.options['password_file']}"]
        return "\n".join(lines + self.extra_lines) + "\n"


def bridge_lines(remote_ports: list[int], topics: list[str], name: str = "b", extra: list[str] | None = None):
    return ([f"connection {name}", "address " + " ".join(f"127.0.0.1:{p}" for p in remote_ports)]
            + [f"topic {t}" for t in topics]
            + [f"remote_clientid bridge-{uuid.uuid4().hex[:8]}", "restart_timeout 1 2", "keepalive_interval 10"]
            + (extra or []))


@pytest.fixture
def mosquitto_store():
    """A persistence directory mosquitto can write: started as root it runs as the `mosquitto` user, which cannot
    enter pytest's private tmp_path. Removed at teardown."""
    d = Path(tempfile.mkdtemp(prefix="bridge-mosq-"))
    d.chmod(0o777)
    yield f"{d}/"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """A throwaway CA, the server certificate (127.0.0.1) and a client certificate `bridge`."""
    d = tmp_path_factory.mktemp("bridge-pki")
    script = Path(__file__).resolve().parents[2] / "scripts" / "make-test-certs.sh"
    subprocess.run([str(script), str(d), "bridge"], check=True, capture_output=True, timeout=60)
    return d


def wait_state(broker: Broker, clients, value: bytes, timeout: float = 20.0) -> None:
    """Waits for the retained notification `$SYS/broker/connection/+/state` to read `value`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        c = clients(broker)
        c.subscribe("$SYS/broker/connection/+/state", 0)
        try:
            last = c.get(min(2.0, max(0.1, deadline - time.monotonic()))).payload
        except AssertionError:
            last = None
        c.stop()
        if last == value:
            return
        time.sleep(0.2)
    raise AssertionError(f"bridge state never became {value!r} (last {last!r})")


def settle(publish, receiver: Client, topic_check, timeout: float = 15.0) -> None:
    """Publishes probes until one crosses: the remote SUBSCRIBE of an `in` line may follow the state by a moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        publish()
        try:
            m = receiver.get(1.0)
        except AssertionError:
            continue
        if topic_check(m):
            drain(receiver)  # drop further probes
            return
    raise AssertionError("nothing crossed the bridge")


def drain(client: Client, quiet: float = 0.5, limit: int = 1000) -> None:
    """Reads and drops messages until none arrives for `quiet` s; fails after `limit` (a loop that never ends)."""
    for _ in range(limit):
        try:
            client.get(quiet)
        except AssertionError:
            return
    raise AssertionError(f"{client.client_id} still receiving after {limit} messages")
