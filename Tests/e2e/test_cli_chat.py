"""`mqttchat chat` sessions driven through stdin, and `mqttchat history`."""

import re
import time

from cli_helpers import cli_factory, run_cli, start_chat, start_subscriber  # noqa: F401
from conftest import unique

TIME = r"\[\d\d:\d\d:\d\d\]"


def room_name() -> str:
    return unique("room").replace("/", "-")


def test_cli_chat_text_gift_and_direct_message(broker, cli_factory, tmp_path):
    room = room_name()
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    carol = start_chat(cli_factory, broker, room, "carol", tmp_path)
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    # Presence: the others see alice arrive.
    bob.wait_for(rf"^{TIME} \* alice is here$")
    carol.wait_for(rf"^{TIME} \* alice is here$")

    alice.send("hello everyone")
    alice.send("/gift rose 3")
    alice.send("/dm bob psst, bob only")
    alice.send("/members")
    # alice sees her own lines echoed with the time.
    alice.wait_for(rf"^{TIME} alice: hello everyone$")
    alice.wait_for(rf"^{TIME} alice: sent a gift: rose x3$")
    alice.wait_for(rf"^{TIME} \(dm to bob\) psst, bob only$")
    members = alice.wait_for(r"^\* members of #")
    assert members == f"* members of #{room}: alice, bob, carol"

    for p in (bob, carol):
        p.wait_for(rf"^{TIME} alice: hello everyone$")
        p.wait_for(rf"^{TIME} alice: sent a gift: rose x3$")
    bob.wait_for(rf"^{TIME} \(dm from alice\) psst, bob only$")

    # bob answers; alice's /quit leaves, the others see her go.
    bob.send("hi alice")
    alice.wait_for(rf"^{TIME} bob: hi alice$")
    alice.send("/quit")
    assert alice.finish() == 0, alice.err_lines
    bob.wait_for(rf"^{TIME} \* alice left$")
    carol.wait_for(rf"^{TIME} \* alice left$")
    assert bob.finish() == 0 and carol.finish() == 0
    # The direct message reached only bob.
    assert not any("psst" in line for line in carol.lines), carol.lines
    assert sum("psst" in line for line in bob.lines) == 1

    # History: what each one sent and received, with direct messages under the peer.
    r = run_cli("history", "--name", "bob", "--db", str(tmp_path / "bob.sqlite"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "", line) for line in lines] == [
        f"#{room} alice: hello everyone", f"#{room} alice: sent a gift: rose x3", "@alice alice: psst, bob only",
        f"#{room} bob: hi alice"]
    r = run_cli("history", "--name", "alice", "--db", str(tmp_path / "alice.sqlite"), "--room", room)
    assert r.returncode == 0, r.stderr
    assert [line.split(" ", 3)[3] for line in r.stdout.splitlines()] == [
        "alice: hello everyone", "alice: sent a gift: rose x3", "bob: hi alice"]
    r = run_cli("history", "--name", "alice", "--db", str(tmp_path / "alice.sqlite"), "--dm", "bob")
    assert [line.split(" ", 3)[3] for line in r.stdout.splitlines()] == ["alice: psst, bob only"]
    r = run_cli("history", "--name", "carol", "--db", str(tmp_path / "carol.sqlite"), "--limit", "1")
    assert [line.split(" ", 3)[3] for line in r.stdout.splitlines()] == ["bob: hi alice"]


def test_cli_chat_piped_script_ends_by_itself(broker, cli_factory, tmp_path):
    """The whole script is in the pipe at once: read until EOF, then leave and disconnect."""
    room = room_name()
    watcher = start_chat(cli_factory, broker, room, "watcher", tmp_path)
    script = "first line\n/gift cake\n/history 5\nlast line\n"
    started = time.monotonic()
    r = run_cli("chat", "-p", str(broker.port), "--room", room, "--name", "scripted",
                "--history-db", str(tmp_path / "scripted.sqlite"), input=script, timeout=20)
    elapsed = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    assert elapsed < 10, elapsed
    out = r.stdout.splitlines()
    assert any(line.startswith(f"* joined #{room} as scripted") for line in out), out
    assert any(re.match(rf"^{TIME} \* watcher is here$", line) for line in out), out
    assert re.search(rf"(?m)^\* last 2 messages of #{room}:$", r.stdout), r.stdout
    assert any(line.endswith("scripted: last line") for line in out)
    for expected in ("scripted: first line", "scripted: sent a gift: cake x1", "scripted: last line"):
        watcher.wait_for(rf"^{TIME} {re.escape(expected)}$")
    watcher.wait_for(rf"^{TIME} \* scripted left$")
    assert watcher.finish() == 0


def test_cli_chat_leave_keeps_direct_messages(broker, cli_factory, tmp_path):
    room = room_name()
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    bob.wait_for(rf"^{TIME} \* alice is here$")
    alice.send("/leave")
    alice.wait_for(rf"^\* you left #{room}")
    bob.wait_for(rf"^{TIME} \* alice left$")
    bob.send("/members")
    assert bob.wait_for(r"^\* members of") == f"* members of #{room}: bob"
    bob.send("/dm alice still there?")
    alice.wait_for(rf"^{TIME} \(dm from bob\) still there\?$")
    alice.send("not in the room")
    alice.wait_for(r"^\* you are not in a room")
    assert alice.finish() == 0 and bob.finish() == 0


def test_cli_chat_presence_of_killed_user(broker, cli_factory, tmp_path):
    room = room_name()
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path, "-k", "5")
    bob.wait_for(rf"^{TIME} \* alice is here$")
    alice.kill()  # no DISCONNECT: the broker publishes alice's will (offline status)
    bob.wait_for(rf"^{TIME} \* alice went offline$", timeout=15)
    assert bob.finish() == 0


def test_cli_chat_explicit_client_id(broker, cli_factory, tmp_path):
    """-i sets the user id (the MQTT client id and inbox) while --name is what others see."""
    room = room_name()
    watch = start_subscriber(cli_factory, broker, "-t", "mqttchat/users/+/inbox", "-C", "1", "-v")
    bob = start_chat(cli_factory, broker, room, "Bob", tmp_path, "-i", "bob-42")
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    alice.send("/members")
    assert alice.wait_for(r"^\* members of") == f"* members of #{room}: alice, Bob [bob-42]"
    alice.send("/dm bob-42 hi")
    bob.wait_for(rf"^{TIME} \(dm from alice\) hi$")
    assert watch.finish() == 0
    assert watch.lines[0].startswith("mqttchat/users/bob-42/inbox ")
    assert alice.finish() == 0 and bob.finish() == 0


def test_cli_chat_ctrl_c_leaves_cleanly(broker, cli_factory, tmp_path):
    import signal
    room = room_name()
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    bob.wait_for(rf"^{TIME} \* alice is here$")
    alice.proc.send_signal(signal.SIGINT)  # stdin stays open: only the signal ends the session
    assert alice.proc.wait(10) == 0
    bob.wait_for(rf"^{TIME} \* alice left$")
    assert bob.finish() == 0
    assert not any("alice went offline" in line for line in bob.lines)
