"""`mqttchat subscribe -F FORMAT` next to the real `mosquitto_sub -F FORMAT`: the same messages, received by
both at once from the same broker, must print the same bytes (for the deterministic codes), and a bad format
must be refused the same way. Runs against mosquitto and our broker."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest

from cli_helpers import cli_bin, run_cli
from conftest import Broker, unique

# Every deterministic code, flags/width/max width, and the escapes; `|` separates fields for the eye.
FORMAT = r"%t|%p|%q|%r|%m|%l|%x|%X|%%|%P|%A|%C|%D|%E|%F|%R|%S|\t|\\|%10t|%-6l|%05l|%.3t|%5.2t|@@|\e|\a|\0|\n"


def need_mosquitto_sub() -> None:
    if shutil.which("mosquitto_sub") is None:
        pytest.skip("mosquitto_sub is not installed")


class Receiver:
    """One subscriber process (ours or mosquitto_sub) reading `count` messages, stdout captured as bytes.

    Both run with -d to learn when the SUBACK is in. Ours reports on stderr; mosquitto_sub prints its debug
    lines on stdout (hence `stdbuf -oL`), so they are read up to the SUBACK and stripped from the rest."""

    # Not anchored: with -N a debug line follows the last output byte directly.
    DEBUG_LINE = re.compile(rb"(Client \(null\) [^\n]*|Subscribed \(mid: \d+\): [^\n]*)\n")

    def __init__(self, argv: list[str], debug_on_stdout: bool):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.debug_on_stdout = debug_on_stdout
        self.head = b""

    def wait_subscribed(self, timeout: float = 10.0) -> None:
        stream = self.proc.stdout if self.debug_on_stdout else self.proc.stderr
        ready = b"Subscribed (mid" if self.debug_on_stdout else b"Subscribed to "
        assert stream is not None
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith(ready):
                return
        self.proc.kill()
        raise AssertionError(f"not subscribed: {seen}")

    def output(self, timeout: float = 15.0) -> bytes:
        # Read through the buffered file objects: wait_subscribed's readline may already hold later bytes.
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("subscriber did not finish") from None
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        return self.DEBUG_LINE.sub(b"", out) if self.debug_on_stdout else out


def both(broker: Broker, topic: str, count: int, *args: str) -> tuple[Receiver, Receiver]:
    port = str(broker.port)
    common = ["-p", port, "-t", topic, "-q", "1", "-C", str(count), "-W", "10", "-d", *args]
    ours = Receiver([cli_bin(), "subscribe", *common], debug_on_stdout=False)
    theirs = Receiver(["stdbuf", "-oL", "mosquitto_sub", "-V", "mqttv311", *common], debug_on_stdout=True)
    ours.wait_subscribed()
    theirs.wait_subscribed()
    return ours, theirs


@pytest.fixture
def receivers():
    made: list[Receiver] = []
    yield made
    for r in made:
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait(5)


def test_cli_format_matches_mosquitto_sub(broker, client_factory, receivers):
    need_mosquitto_sub()
    base = unique("fmt")
    publisher = client_factory(broker)
    publisher.publish(base + "/kept", "retained one", qos=1, retain=True)
    payloads = [b"hello", b"", 'é"\\'.encode(), b"\x00\x01\xfe\xff", b"line\nbreak"]
    ours, theirs = both(broker, base + "/#", len(payloads) + 1, "-F", FORMAT)
    receivers += [ours, theirs]
    for i, payload in enumerate(payloads):
        publisher.publish(f"{base}/m{i}", payload, qos=1 if i % 2 else 2)
    expected = theirs.output()
    assert expected.count(b"|retained one|") == 1 and len(expected) > 100, expected
    assert ours.output() == expected


@pytest.mark.parametrize("fmt", ["%p", "%t %l", "%x"])
def test_cli_format_no_end_of_line(broker, client_factory, receivers, fmt):
    need_mosquitto_sub()
    topic = unique("fmtn")
    ours, theirs = both(broker, topic, 2, "-N", "-F", fmt)
    receivers += [ours, theirs]
    publisher = client_factory(broker)
    publisher.publish(topic, "a", qos=1)
    publisher.publish(topic, "bc", qos=1)
    assert ours.output() == theirs.output()


def test_cli_format_times_and_json(broker, client_factory, receivers):
    need_mosquitto_sub()
    topic = unique("fmtj")
    fmt = "%I|%U|@Y-@m|%j"
    ours, theirs = both(broker, topic, 2, "-F", fmt)
    receivers += [ours, theirs]
    publisher = client_factory(broker)
    publisher.publish(topic, 'say "hi"\t', qos=1)
    publisher.publish(topic, b"", qos=1)
    lines = {"ours": ours.output().decode().splitlines(), "theirs": theirs.output().decode().splitlines()}
    shapes = {}
    now = time.time()
    for who, rows in lines.items():
        assert len(rows) == 2, (who, rows)
        shape = []
        for row in rows:
            iso, unix, year_month, js = row.split("|", 3)
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", iso), (who, iso)
            assert re.fullmatch(r"\d+\.\d{9}", unix) and abs(float(unix) - now) < 30, (who, unix)
            assert year_month == time.strftime("%Y-%m"), (who, year_month)
            obj = json.loads(js)
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z[+-]\d{4}", obj.pop("tst")), (who, js)
            shape.append((obj, re.sub(r'"tst":"[^"]*"', '"tst":""', js)))
        shapes[who] = shape
    assert shapes["ours"] == shapes["theirs"]


@pytest.mark.parametrize("fmt", ["%z", "%", "%5", "abc\\", "\\q", "@"])
def test_cli_format_errors_like_mosquitto_sub(fmt):
    need_mosquitto_sub()
    theirs = subprocess.run(["mosquitto_sub", "-t", "x", "-F", fmt], capture_output=True, text=True, timeout=10)
    reason = theirs.stderr.splitlines()[0].removeprefix("Error: ")
    r = run_cli("subscribe", "-t", "x", "-F", fmt)
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert reason in r.stderr, (reason, r.stderr)


def test_cli_format_pretty_and_conflicts(broker, client_factory):
    topic = unique("pretty")
    publisher = client_factory(broker)
    publisher.publish(topic, "p", qos=1, retain=True)
    r = run_cli("subscribe", "-p", str(broker.port), "-t", topic, "-C", "1", "-W", "5", "--format", "json", "--pretty")
    assert r.returncode == 0 and json.loads(r.stdout)["payload"] == "p" and "\n  " in r.stdout, r.stdout
    r = run_cli("subscribe", "-t", topic, "-F", "%p", "--format", "json")
    assert r.returncode == 64 and "-F cannot be combined with --format" in r.stderr
