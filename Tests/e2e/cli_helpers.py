"""Helpers for the tests of the `mqttchat` client commands (test_cli_*.py): running the binary,
driving interactive chat sessions through stdin, a password-protected mosquitto, and a minimal
protobuf wire-format reader (no protobuf package is installed)."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import AuthBroker, make_passwd_with_mosquitto

WAIT = 10.0
REPO = Path(__file__).resolve().parents[2]


def cli_bin() -> str:
    path = os.environ.get("MQTTCHAT_BIN")
    if not path or not os.path.isfile(path):
        pytest.skip("MQTTCHAT_BIN is unset or not a file: build mqttchat and export MQTTCHAT_BIN")
    return path


def roombot_bin() -> str:
    """ROOMBOT_BIN, or the RoomBot executable next to MQTTCHAT_BIN (same build folder)."""
    path = os.environ.get("ROOMBOT_BIN") or str(Path(cli_bin()).parent / "RoomBot")
    if not os.path.isfile(path):
        pytest.skip(f"RoomBot not built ({path}): swift build --product RoomBot, or export ROOMBOT_BIN")
    return path


def run_cli(*args: str, input: str | bytes | None = None, timeout: float = 20.0,
            text: bool = True) -> subprocess.CompletedProcess:
    """Runs `mqttchat ARGS...` to completion (bounded)."""
    if text and isinstance(input, bytes):
        input = input.decode()
    return subprocess.run([cli_bin(), *args], input=input, capture_output=True, timeout=timeout, text=text)


class CLIProcess:
    """A running mqttchat (or RoomBot) process with stdin as a pipe and stdout/stderr read line by line."""

    def __init__(self, args: list[str], binary: str | None = None, env: dict | None = None):
        self.args = [binary or cli_bin(), *args]
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.out: "queue.Queue[str | None]" = queue.Queue()
        self.err: "queue.Queue[str | None]" = queue.Queue()
        self.lines: list[str] = []       # every stdout line seen so far (by wait_for / finish)
        self.err_lines: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.out), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err), daemon=True).start()

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink.put(line.rstrip("\n"))
        sink.put(None)

    def _wait(self, sink, seen: list[str], pattern: str, timeout: float) -> str:
        regex = re.compile(pattern)
        for line in seen:
            if regex.search(line):
                return line
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = sink.get(timeout=max(0.01, remaining))
            except queue.Empty:
                raise AssertionError(f"{self.args[1:3]}: no line matching {pattern!r} within {timeout}s; "
                                     f"stdout={self.lines} stderr={self.err_lines}") from None
            if line is None:
                sink.put(None)  # keep the end marker for later waits
                raise AssertionError(f"{self.args[1:3]} ended (rc={self.proc.poll()}) before {pattern!r}; "
                                     f"stdout={self.lines} stderr={self.err_lines}")
            seen.append(line)
            if regex.search(line):
                return line

    def wait_for(self, pattern: str, timeout: float = WAIT) -> str:
        """The first stdout line (seen before or arriving within `timeout`) that matches the regex."""
        return self._wait(self.out, self.lines, pattern, timeout)

    def wait_for_err(self, pattern: str, timeout: float = WAIT) -> str:
        return self._wait(self.err, self.err_lines, pattern, timeout)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def finish(self, timeout: float = WAIT) -> int:
        """Closes stdin, waits for the exit (bounded) and collects the remaining output."""
        self.close_stdin()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.args[1:3]} did not exit within {timeout}s after EOF; "
                                 f"stdout={self.lines}") from None
        for sink, seen in ((self.out, self.lines), (self.err, self.err_lines)):
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                line = sink.get(timeout=WAIT)
                if line is None:
                    break
                seen.append(line)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def cli_factory():
    """cli_factory([args...], binary=None) -> CLIProcess; every process is killed at teardown."""
    made: list[CLIProcess] = []

    def factory(args: list[str], binary: str | None = None) -> CLIProcess:
        p = CLIProcess(args, binary)
        made.append(p)
        return p

    yield factory
    for p in made:
        p.kill()


def start_chat(cli_factory, broker, room: str, name: str, tmp_path: Path, *extra: str) -> CLIProcess:
    """A `mqttchat chat` session that has joined `room` (history in tmp_path/<name>.sqlite)."""
    p = cli_factory(["chat", "-p", str(broker.port), "--room", room, "--name", name,
                     "--history-db", str(tmp_path / f"{name}.sqlite"), "--linger", "0.5", *extra])
    p.wait_for(rf"^\* joined #{re.escape(room)} as ")
    return p


def start_subscriber(cli_factory, broker, *args: str) -> CLIProcess:
    """`mqttchat subscribe -d ARGS` that has its SUBACK(s) ("Subscribed to ..." on stderr)."""
    p = cli_factory(["subscribe", "-p", str(broker.port), "-d", *args])
    topics = [args[i + 1] for i, a in enumerate(args) if a == "-t"]
    for t in topics:
        p.wait_for_err(rf"^Subscribed to {re.escape(t)} ")
    return p


# --------------------------------------------------------------------------- mosquitto with passwords

@pytest.fixture
def auth_broker(tmp_path):
    """mosquitto on a free port that requires a user name and password (alice / s3cret)."""
    if shutil.which("mosquitto") is None or shutil.which("mosquitto_passwd") is None:
        pytest.skip("mosquitto / mosquitto_passwd not installed")
    directory = tmp_path / "auth"
    directory.mkdir()
    make_passwd_with_mosquitto(directory / "passwd", [("alice", "s3cret")])
    broker = AuthBroker("mosquitto", directory, {"allow_anonymous": "false", "password_file": directory / "passwd"})
    broker.start()
    yield broker
    broker.stop()


# --------------------------------------------------------------------------- protobuf wire format

def read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def split_delimited(data: bytes) -> list[bytes]:
    """Frames of a varint-length-prefixed stream; raises if the stream is cut."""
    frames, i = [], 0
    while i < len(data):
        length, i = read_varint(data, i)
        if i + length > len(data):
            raise ValueError("truncated frame")
        frames.append(data[i:i + length])
        i += length
    return frames


def decode_fields(data: bytes) -> dict[int, list]:
    """A protobuf message as {field number: [values]} (varints as int, length-delimited as bytes)."""
    fields: dict[int, list] = {}
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 2:
            length, i = read_varint(data, i)
            if i + length > len(data):
                raise ValueError("truncated field")
            value, i = data[i:i + length], i + length
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        if number == 0:
            raise ValueError("field number 0")
        fields.setdefault(number, []).append(value)
    return fields


def decode_envelope(data: bytes) -> dict:
    """The fields of mqttchat.v1.Envelope the tests look at (see Sources/MQTTChat/Proto/chat.proto)."""
    f = decode_fields(data)
    one = lambda n, d=b"": f.get(n, [d])[-1]  # noqa: E731
    env = {"message_id": one(1).decode(), "sender_id": one(2).decode(), "room": one(3).decode(),
           "sent_at_ms": one(4, 0), "type": one(5, 0)}
    if 12 in f:
        env["text"] = decode_fields(one(12)).get(2, [b""])[-1].decode()
    if 13 in f:
        g = decode_fields(one(13))
        env["gift"] = (g.get(2, [b""])[-1].decode(), g.get(4, [0])[-1])
    return env
