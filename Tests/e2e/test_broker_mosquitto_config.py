"""`mqttchat broker` with mosquitto configuration files: Debian's stock /etc/mosquitto/mosquitto.conf starts
(pid_file ignored with a warning, persistence, log_dest file, include_dir), mosquitto options it does not support
are named as such, and a missing file or a bad -p get short, exact messages."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cli_helpers import cli_bin, run_cli
from conftest import free_port, mosquitto_pub, unique

# Debian's stock file (mosquitto 2.0.11), used when this machine has none.
DEBIAN_STOCK = """# Place your local configuration in /etc/mosquitto/conf.d/
#
# A full description of the configuration file is at
# /usr/share/doc/mosquitto/examples/mosquitto.conf.example

pid_file /run/mosquitto/mosquitto.pid

persistence true
persistence_location /var/lib/mosquitto/

log_dest file /var/log/mosquitto/mosquitto.log

include_dir /etc/mosquitto/conf.d
"""


class BrokerProcess:
    """`mqttchat broker -c CONF`, ready once it prints its "listening on" line; always stopped by the test."""

    def __init__(self, conf: Path):
        self.proc = subprocess.Popen([cli_bin(), "broker", "-c", str(conf)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.stdout: "queue.Queue[str | None]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.put(line)
        self.stdout.put(None)

    def wait_listening(self, timeout: float = 15.0) -> str:
        try:
            line = self.stdout.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None or "listening on" not in line:
            self.stop()
            raise AssertionError(f"broker not listening: {line!r}, stderr: {self.stderr()}")
        return line

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def stderr(self) -> str:
        if self.proc.poll() is None:
            self.stop()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


@pytest.fixture
def broker_processes():
    made: list[BrokerProcess] = []

    def start(conf: Path) -> BrokerProcess:
        b = BrokerProcess(conf)
        made.append(b)
        return b

    yield start
    for b in made:
        b.stop()


def test_broker_starts_on_debian_stock_config(tmp_path, broker_processes):
    stock = Path("/etc/mosquitto/mosquitto.conf")
    text = stock.read_text() if stock.is_file() else DEBIAN_STOCK
    port = free_port()
    # The copy keeps every line; only the paths move into tmp_path (the test must not touch /var or /etc), and
    # the listener, which the stock file leaves at mosquitto's default 1883, moves to a free port through a
    # file in the included directory, as a Debian administrator would add it.
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    (conf_d / "listener.conf").write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
    (conf_d / "README").write_text("Any files placed in this directory that have a .conf ending will be loaded\n")
    log = tmp_path / "mosquitto.log"
    text = re.sub(r"(?m)^persistence_location .*$", f"persistence_location {tmp_path / 'persist'}/", text)
    text = re.sub(r"(?m)^log_dest file .*$", f"log_dest file {log}", text)
    text = re.sub(r"(?m)^include_dir .*$", f"include_dir {conf_d}", text)
    (tmp_path / "persist").mkdir()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(text)

    b = broker_processes(conf)
    assert f"127.0.0.1:{port}" in b.wait_listening()
    topic = unique("debian")

    class Port:  # mosquitto_pub only needs .port, and .login for brokers that want a user name
        login = None

    target = Port()
    target.port = port
    mosquitto_pub(target, topic, "kept", qos=1, retain=True)
    r = run_cli("subscribe", "-p", str(port), "-t", topic, "-C", "1", "-W", "5")
    assert (r.returncode, r.stdout) == (0, "kept\n"), r.stderr
    assert b.stop() == 0
    err = b.stderr()
    assert re.search(rf"warning: {re.escape(str(conf))}:\d+: ignoring mosquitto option 'pid_file': ", err), err
    assert log.stat().st_size > 0  # log_dest file took the log lines
    assert any((tmp_path / "persist").iterdir())  # persistence wrote its files

    # Persistence: a restart on the same config still has the retained message.
    b = broker_processes(conf)
    b.wait_listening()
    r = run_cli("subscribe", "-p", str(port), "-t", topic, "-C", "1", "-W", "5")
    assert (r.returncode, r.stdout) == (0, "kept\n"), r.stderr


@pytest.mark.parametrize("line, shown", [
    ("clientid_prefixes sensor-", "clientid_prefixes"),
    ("log_dest syslog", "log_dest syslog"),
    ("auth_opt_db_host localhost", "auth_opt_db_host"),
])
def test_broker_names_unsupported_mosquitto_options(tmp_path, line, shown):
    conf = tmp_path / "m.conf"
    conf.write_text(f"listener {free_port()}\n{line}\n")
    r = run_cli("broker", "-c", str(conf), timeout=20)
    assert r.returncode == 78, (r.returncode, r.stderr)
    assert f"mosquitto option not supported by mqttchat: {shown} ({conf}:2)" in r.stderr


def test_broker_unknown_word_stays_unknown(tmp_path):
    conf = tmp_path / "m.conf"
    conf.write_text("listner 1883\n")
    r = run_cli("broker", "-c", str(conf), timeout=20)
    assert r.returncode == 78 and f"{conf}:1: unknown option 'listner'" in r.stderr, r.stderr


def test_broker_missing_config_file(tmp_path):
    missing = tmp_path / "nonexistent.conf"
    r = run_cli("broker", "-c", str(missing), timeout=20)
    assert r.returncode == 78, (r.returncode, r.stderr)
    assert r.stderr.strip() == f"mqttchat broker: cannot read {missing}: no such file"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_broker_unreadable_config_file(tmp_path):
    conf = tmp_path / "secret.conf"
    conf.write_text("listener 1883\n")
    conf.chmod(0)
    r = run_cli("broker", "-c", str(conf), timeout=20)
    assert r.returncode == 78 and f"cannot read {conf}: permission denied" in r.stderr, r.stderr


def test_broker_bad_port_shows_broker_usage():
    started = time.monotonic()
    r = run_cli("broker", "-p", "70000", timeout=20)
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert "--port must be between 0 and 65535" in r.stderr
    assert "Usage: mqttchat broker" in r.stderr, r.stderr
    assert time.monotonic() - started < 15
