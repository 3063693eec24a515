"""`mqttchat publish` and `mqttchat subscribe` against each broker, and against mosquitto_pub/_sub."""

import json
import subprocess
import time

import pytest

from cli_helpers import (cli_bin, cli_factory, decode_envelope, run_cli, split_delimited,  # noqa: F401
                         start_subscriber)
from conftest import mosquitto_pub, unique


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_cli_publish_to_mosquitto_sub(broker, sub_factory, qos):
    topic = unique("clipub")
    sub = sub_factory(broker, topic, count=2, qos=qos)
    sub.wait_subscribed()
    for i in range(2):
        r = run_cli("publish", "-p", str(broker.port), "-t", topic, "-m", f"hello {i}", "-q", str(qos))
        assert r.returncode == 0, r.stderr
    assert sub.result() == [(topic, qos, 0, f"hello {i}") for i in range(2)]


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_cli_subscribe_from_mosquitto_pub(broker, cli_factory, qos):
    topic = unique("clisub")
    sub = start_subscriber(cli_factory, broker, "-t", topic, "-q", str(qos), "-C", "3", "--format", "json")
    for i in range(3):
        mosquitto_pub(broker, topic, f"m{i}", qos=2)
    assert sub.finish() == 0, sub.err_lines
    rows = [json.loads(line) for line in sub.lines]
    # Delivered QoS = min(published 2, granted): the subscription's QoS (MQTT-3.8.4-6).
    assert rows == [{"topic": topic, "qos": qos, "retain": False, "payload": f"m{i}"} for i in range(3)]


def test_cli_verbose_lines_null_and_retained(broker, cli_factory):
    topic = unique("clilines")
    sub = start_subscriber(cli_factory, broker, "-t", topic + "/#", "-C", "4", "-v")
    r = run_cli("publish", "-p", str(broker.port), "-t", topic + "/a", "-l", "-q", "1", input="one\ntwo\nthree\n")
    assert r.returncode == 0, r.stderr
    r = run_cli("publish", "-p", str(broker.port), "-t", topic + "/b", "-n")
    assert r.returncode == 0, r.stderr
    assert sub.finish() == 0
    assert sub.lines == [f"{topic}/a one", f"{topic}/a two", f"{topic}/a three", f"{topic}/b "]

    # -r: a later subscriber gets the retained message (json shows retain true); -r -n clears it.
    assert run_cli("publish", "-p", str(broker.port), "-t", topic, "-m", "sticky", "-r", "-q", "1").returncode == 0
    r = run_cli("subscribe", "-p", str(broker.port), "-t", topic, "-C", "1", "-W", "5", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"topic": topic, "qos": 0, "retain": True, "payload": "sticky"}
    assert run_cli("publish", "-p", str(broker.port), "-t", topic, "-n", "-r", "-q", "1").returncode == 0
    r = run_cli("subscribe", "-p", str(broker.port), "-t", topic, "-C", "1", "-W", "1")
    assert r.returncode == 27 and r.stdout == ""


def test_cli_subscribe_several_topics_and_count(broker, cli_factory):
    a, b = unique("clia"), unique("clib")
    sub = start_subscriber(cli_factory, broker, "-t", a, "-t", b, "-C", "2", "-v")
    mosquitto_pub(broker, a, "to a")
    mosquitto_pub(broker, b, "to b")
    assert sub.finish() == 0
    assert sorted(sub.lines) == [f"{a} to a", f"{b} to b"]


def test_cli_subscribe_timeout_exit_27(broker):
    topic = unique("cliwait")
    started = time.monotonic()
    r = run_cli("subscribe", "-p", str(broker.port), "-t", topic, "-W", "1")
    elapsed = time.monotonic() - started
    assert r.returncode == 27, (r.returncode, r.stderr)
    assert "timed out" in r.stderr
    assert 0.9 <= elapsed < 6, elapsed


def test_cli_subscribe_timeout_after_fewer_than_count(broker, cli_factory):
    topic = unique("cliwait")
    sub = start_subscriber(cli_factory, broker, "-t", topic, "-C", "3", "-W", "2")
    mosquitto_pub(broker, topic, "only one")
    assert sub.finish() == 27
    assert sub.lines == ["only one"]
    assert any("1 of 3" in line for line in sub.err_lines), sub.err_lines


def test_cli_binary_payload_as_hex(broker, cli_factory, tmp_path):
    topic = unique("clibin")
    blob = bytes([0, 1, 2, 0xFE, 0xFF])
    (tmp_path / "blob").write_bytes(blob)
    sub = start_subscriber(cli_factory, broker, "-t", topic, "-C", "2", "--format", "json")
    assert run_cli("publish", "-p", str(broker.port), "-t", topic, "-f", str(tmp_path / "blob")).returncode == 0
    assert run_cli("publish", "-p", str(broker.port), "-t", topic, "-m", "grüße").returncode == 0
    assert sub.finish() == 0
    rows = [json.loads(line) for line in sub.lines]
    assert rows[0]["payload_hex"] == "000102feff" and "payload" not in rows[0]
    assert rows[1]["payload"] == "grüße"


def test_cli_chat_envelopes_as_text_and_json(broker, cli_factory):
    room = unique("room").replace("/", "-")
    topic = f"mqttchat/rooms/{room}/messages"
    text = start_subscriber(cli_factory, broker, "-t", topic, "-C", "2", "-v")
    js = start_subscriber(cli_factory, broker, "-t", "mqttchat/rooms/+/messages", "-C", "2", "--format", "json")
    r = run_cli("publish", "-p", str(broker.port), "--room", room, "--name", "alice", "--chat-text", "hi there")
    assert r.returncode == 0, r.stderr
    r = run_cli("publish", "-p", str(broker.port), "--room", room, "--name", "alice", "--chat-gift", "rose:3")
    assert r.returncode == 0, r.stderr
    assert text.finish() == 0 and js.finish() == 0
    assert text.lines[0].startswith(f"{topic} ") and text.lines[0].endswith(f"#{room} text alice: hi there")
    assert text.lines[1].endswith(f"#{room} gift alice: rose x3")
    rows = [json.loads(line) for line in js.lines]
    # Text at QoS 1 and gift at QoS 2 (the chat layer's QoS), downgraded to the subscription's 0.
    assert [r["topic"] for r in rows] == [topic, topic]
    env = [r["envelope"] for r in rows]
    assert env[0]["type"] == "text" and env[0]["text"] == "hi there"
    assert env[1]["type"] == "gift" and env[1]["gift"] == {"name": "rose", "count": 3, "url": ""}
    for e in env:
        assert e["sender_id"] == "alice" and e["room"] == room and len(e["message_id"]) >= 16
        assert abs(e["sent_at_ms"] / 1000 - time.time()) < 60 and e["sent_at"].endswith("Z")


def test_cli_delimited_capture_and_replay(broker, cli_factory, tmp_path):
    room = unique("room").replace("/", "-")
    topic = f"mqttchat/rooms/{room}/messages"
    raw = tmp_path / "capture.bin"
    with open(raw, "wb") as out:
        # Binary stdout straight into a file; -d reports the SUBACK on stderr.
        proc = subprocess.Popen([cli_bin(), "subscribe", "-p", str(broker.port), "-t", topic, "-C", "3",
                                 "-W", "10", "--format", "delimited", "-d"],
                                stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            assert proc.stderr.readline().startswith(b"Connected")
            assert proc.stderr.readline().startswith(b"Subscribed")
            for args in (["--chat-text", "first"], ["--chat-gift", "star:2"], ["--chat-text", "third line"]):
                r = run_cli("publish", "-p", str(broker.port), "--room", room, "--name", "bob", *args)
                assert r.returncode == 0, r.stderr
            assert proc.wait(15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    frames = split_delimited(raw.read_bytes())
    envelopes = [decode_envelope(f) for f in frames]
    assert [e.get("text") or e.get("gift") for e in envelopes] == ["first", ("star", 2), "third line"]
    assert all(e["sender_id"] == "bob" and e["room"] == room for e in envelopes)
    assert [e["type"] for e in envelopes] == [2, 3, 2]  # TEXT, GIFT, TEXT

    # Replay: one PUBLISH per envelope, to its room's topic; the texts show up decoded.
    replay_sub = start_subscriber(cli_factory, broker, "-t", topic, "-C", "3")
    r = run_cli("publish", "-p", str(broker.port), "--delimited", "-f", str(raw), "-q", "1")
    assert r.returncode == 0, r.stderr
    assert replay_sub.finish() == 0
    assert [line.split(" ", 2)[2] for line in replay_sub.lines] == [
        "text bob: first", "gift bob: star x2", "text bob: third line"]

    # ... or to -t.
    other = unique("replay")
    replay_t = start_subscriber(cli_factory, broker, "-t", other, "-C", "3", "--format", "json")
    assert run_cli("publish", "-p", str(broker.port), "--delimited", "-f", str(raw), "-t", other).returncode == 0
    assert replay_t.finish() == 0
    # Not a chat topic: the payloads are shown raw (hex unless they happen to be UTF-8), byte for byte the
    # captured envelopes.
    rows = [json.loads(line) for line in replay_t.lines]
    assert [bytes.fromhex(r["payload_hex"]) if "payload_hex" in r else r["payload"].encode() for r in rows] == frames


def test_cli_delimited_rejects_truncated_stream(broker, tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x10abc")  # announces 16 bytes, has 3
    r = run_cli("publish", "-p", str(broker.port), "--delimited", "-f", str(bad))
    assert r.returncode == 65 and "middle of an envelope" in r.stderr
