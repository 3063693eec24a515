"""`mqttchat chat` on MQTT 5: /info, a late joiner served by RoomBot's room history service, and direct
messages kept by the inbox session of a user who went away (three chat processes and the bot)."""

import re

from cli_helpers import cli_factory, roombot_bin, run_cli, start_chat  # noqa: F401
from conftest import unique

TIME = r"\[\d\d:\d\d:\d\d\]"
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def test_cli_chat_mqtt5_late_joiner_and_inbox_session(broker, cli_factory, tmp_path):
    room = unique("room").replace("/", "-")
    bot = cli_factory(["--room", room, "--name", "historian", "--history", "50", "-p", str(broker.port)],
                      binary=roombot_bin())
    bot.wait_for(rf"^RoomBot keeps the last 50 messages of #{re.escape(room)} for late joiners$")
    bot.wait_for(rf"^RoomBot ready in #{re.escape(room)}")

    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    alice.send("/info")
    info = alice.wait_for(r"^\* alice in #")
    assert info == (f"* alice in #{room} on 127.0.0.1:{broker.port} with MQTT 5 "
                    "(inbox session kept 7 d, direct messages expire after 7 d)"), info
    for i in range(1, 4):
        alice.send(f"line {i}")
    bob.wait_for(rf"^{TIME} alice: line 3$")

    # carol joins late: the room history service answers her join with what she missed.
    carol = start_chat(cli_factory, broker, room, "carol", tmp_path)
    carol.wait_for(rf"^\* \d+ earlier messages? of #{re.escape(room)} from the room history service:$")
    for i in range(1, 4):
        carol.wait_for(rf"^{DATE} #{re.escape(room)} alice: line {i}$")
    carol.send("/history 50")
    carol.wait_for(r"^\* last \d+ messages of #")
    carol.send("/quit")
    assert carol.finish() == 0, carol.err_lines
    # Each line once in the merged block and once in /history: merged into history without duplicates.
    for i in range(1, 4):
        assert sum(line.endswith(f" alice: line {i}") for line in carol.lines) == 2, carol.lines
    r = run_cli("history", "--name", "carol", "--db", str(tmp_path / "carol.sqlite"), "--room", room)
    assert r.returncode == 0, r.stderr
    assert [line.split(": ", 1)[1] for line in r.stdout.splitlines() if " alice: " in line] == \
        ["line 1", "line 2", "line 3"], r.stdout

    # bob goes away; his inbox session keeps a direct message for him until he is back.
    bob.send("/quit")
    assert bob.finish() == 0, bob.err_lines
    alice.wait_for(rf"^{TIME} \* bob left$")
    alice.send("/dm bob while you were away")
    alice.wait_for(rf"^{TIME} \(dm to bob\) while you were away$")
    bob_again = start_chat(cli_factory, broker, room, "bob", tmp_path)
    bob_again.wait_for(rf"^{TIME} \(dm from alice\) while you were away$")
    assert bob_again.finish() == 0 and alice.finish() == 0

    bot.proc.terminate()
    assert bot.proc.wait(10) == 0
