"""`mqttchat chat` details a first-time user trips over: no history file is left behind when the broker cannot be
reached, and `/dm` to someone who is not online says so (and still sends, for a persistent session)."""

from __future__ import annotations

import os
import subprocess

from cli_helpers import cli_bin, cli_factory, run_cli, start_chat  # noqa: F401
from conftest import free_port, unique

TIME_RE = r"\[\d\d:\d\d:\d\d\]"


def test_cli_chat_unreachable_creates_no_history(tmp_path):
    port = str(free_port())  # nothing listens there
    db = tmp_path / "h.sqlite"
    r = run_cli("chat", "-p", port, "--room", "lobby", "--name", "alice", "--history-db", str(db), input="")
    assert r.returncode == 69, (r.returncode, r.stderr)
    assert not db.exists()
    # The default location (~/.mqttchat/NAME.sqlite) is not created either, nor its folder.
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    r = subprocess.run([cli_bin(), "chat", "-p", port, "--room", "lobby", "--name", "alice"], input="",
                       capture_output=True, text=True, timeout=20, env=env)
    assert r.returncode == 69, (r.returncode, r.stderr)
    assert not (home / ".mqttchat").exists()


def test_cli_chat_history_created_after_connecting(broker, tmp_path):
    db = tmp_path / "h.sqlite"
    r = run_cli("chat", "-p", str(broker.port), "--room", "lobby", "--name", "alice", "--history-db", str(db),
                "--linger", "0", input="hello\n")
    assert r.returncode == 0, r.stderr
    assert db.exists()


def test_cli_chat_dm_to_someone_not_online(broker, cli_factory, tmp_path):
    room = unique("room").replace("/", "-")
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    alice.wait_for(rf"^{TIME_RE} \* bob is here$")
    alice.send("/dm nobody are you there?")
    alice.wait_for(r"^\* no user 'nobody' is online; sending anyway \(only a persistent session receives it\)$")
    alice.wait_for(rf"^{TIME_RE} \(dm to nobody\) are you there\?$")  # still sent (and in history)
    # Someone online gets no warning.
    alice.send("/dm bob hi bob")
    bob.wait_for(rf"^{TIME_RE} \(dm from alice\) hi bob$")
    assert alice.finish() == 0
    assert not [line for line in alice.lines if "'bob' is online" in line or "no user 'bob'" in line]
