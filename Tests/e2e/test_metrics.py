"""The broker's metrics listener, scraped by a real Prometheus.

Our broker only (mosquitto has no metrics endpoint). The test starts Prometheus itself, on a free port, with a
generated config whose only target is the broker's `metrics_listener`, scraping every second into storage in the
test's tmp dir, and reads our counters back through Prometheus's HTTP query API. scripts/setup.sh installs the
`prometheus` Debian package.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import Broker, Client, free_port, mqttchat_bin, unique

DEADLINE = 20.0


class Prometheus:
    """A Prometheus server of the test's own: config, storage and log in `tmp`, stopped by `stop()`."""

    def __init__(self, binary: str, tmp: Path, target: str):
        self.port = free_port()
        self.config = tmp / "prometheus.yml"
        self.log = tmp / "prometheus.log"
        self.config.write_text(
            "global:\n"
            "  scrape_interval: 1s\n"
            "  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            "  - job_name: mqttchat\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n")
        self._log_file = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={self.config}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if self.get("/-/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"prometheus not ready within {DEADLINE}s:\n{self.output()}")

    def query(self, expression: str) -> list[dict]:
        """The instant vector `expression` evaluates to now (empty before the first scrape)."""
        status, body = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
        assert status == 200, f"query {expression!r}: HTTP {status}: {body}"
        reply = json.loads(body)
        assert reply["status"] == "success", reply
        return reply["data"]["result"]

    def value(self, expression: str) -> float | None:
        result = self.query(expression)
        return float(result[0]["value"][1]) if result else None

    def wait_value(self, expression: str, predicate, what: str) -> float:
        """Polls `expression` until its value satisfies `predicate` (bounded by DEADLINE)."""
        deadline = time.monotonic() + DEADLINE
        value = None
        while time.monotonic() < deadline:
            value = self.value(expression)
            if value is not None and predicate(value):
                return value
            time.sleep(0.25)
        raise AssertionError(f"{expression} never became {what} within {DEADLINE}s (last value {value})\n"
                             f"targets: {self.get('/api/v1/targets')[1]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log_file.close()

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return "<no output>"


@pytest.fixture
def metrics_broker(tmp_path, request):
    """Our broker with a metrics listener on a free 127.0.0.1 port (the `metrics_port` attribute)."""
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file: build mqttchat and export "
                    "MQTTCHAT_BIN=<path to the mqttchat executable>")
    metrics_port = free_port()
    b = Broker("mqttchat", tmp_path, {"metrics_listener": f"127.0.0.1:{metrics_port}"})
    b.metrics_port = metrics_port
    b.start()
    yield b
    b.stop()
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(f"\n===== mqttchat config =====\n{b.config_text()}===== mqttchat output =====\n{b.output()}")


@pytest.fixture
def prometheus(metrics_broker, tmp_path, request):
    """A real Prometheus scraping `metrics_broker` every second; always stopped at teardown."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("the prometheus binary is not installed: run scripts/setup.sh "
                    "(it installs the Debian package `prometheus`)")
    directory = tmp_path / "prometheus"
    directory.mkdir()
    server = Prometheus(binary, directory, f"127.0.0.1:{metrics_broker.metrics_port}")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
        if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
            print(f"\n===== prometheus output =====\n{server.output()}")


def test_metrics_endpoint_serves_prometheus_text(metrics_broker):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_broker.metrics_port}/metrics", timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        body = r.read().decode()
    assert "# TYPE mqttchat_messages_received_total counter" in body, body
    assert "# TYPE mqttchat_clients_connected gauge" in body, body
    with pytest.raises(urllib.error.HTTPError) as not_found:
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_broker.metrics_port}/", timeout=5)
    assert not_found.value.code == 404


def test_prometheus_sees_counters_rise(metrics_broker, prometheus):
    # The target is up once Prometheus scraped it, and our counters are there from the first scrape.
    prometheus.wait_value('up{job="mqttchat"}', lambda v: v == 1, "1 (target up)")
    before = prometheus.wait_value("mqttchat_messages_received_total", lambda v: v >= 0, "present")
    published = prometheus.value("mqttchat_publish_messages_received_total")
    assert published == 0, published

    client = Client(metrics_broker.port).connect()
    try:
        topic = unique("metrics")
        for index in range(10):
            client.publish(f"{topic}/{index}", f"m{index}", qos=1)
    finally:
        client.disconnect()

    # CONNECT, 10 PUBLISH and DISCONNECT from the client: at least 11 more packets received.
    prometheus.wait_value("mqttchat_messages_received_total", lambda v: v >= before + 11, f">= {before + 11}")
    prometheus.wait_value("mqttchat_publish_messages_received_total", lambda v: v == 10, "10")
    listener = f'mqttchat_connections_total{{listener="127.0.0.1:{metrics_broker.port}"}}'
    prometheus.wait_value(listener, lambda v: v >= 2, ">= 2 (the readiness probe and the client)")
