"""The examples: RoomBot (a ChatClient service) and examples/walkthrough.sh."""

import os
import re
import subprocess
import time

from cli_helpers import REPO, cli_bin, cli_factory, roombot_bin, start_chat  # noqa: F401
from conftest import unique

TIME = r"\[\d\d:\d\d:\d\d\]"


def test_cli_roombot_welcome_and_leaderboard(broker, cli_factory, tmp_path):
    room = unique("room").replace("/", "-")
    bot = cli_factory(["--room", room, "-p", str(broker.port)], binary=roombot_bin())
    bot.wait_for(rf"^RoomBot ready in #{re.escape(room)}")

    alice = start_chat(cli_factory, broker, room, "alice", tmp_path)
    alice.wait_for(rf"^{TIME} roombot: Welcome to #{re.escape(room)}, alice!")
    alice.send("/top")
    alice.wait_for(rf"^{TIME} roombot: Gift leaderboard: no gifts yet")
    bob = start_chat(cli_factory, broker, room, "bob", tmp_path)
    bob.wait_for(rf"^{TIME} roombot: Welcome to #{re.escape(room)}, bob!")
    alice.wait_for(rf"^{TIME} roombot: Welcome to #{re.escape(room)}, bob!")  # everyone sees the welcome

    bob.send("/gift star")
    alice.send("/gift rose 3")
    alice.wait_for(rf"^{TIME} bob: sent a gift: star x1$")
    bob.wait_for(rf"^{TIME} alice: sent a gift: rose x3$")
    bob.send("/gift star 1")
    alice.wait_for(rf"^{TIME} bob: sent a gift: star x1$")
    time.sleep(0.3)  # the bot receives the gifts in parallel with alice
    bob.send("/top")
    line = bob.wait_for(rf"^{TIME} roombot: Gift leaderboard: 1\.")
    assert line.endswith("roombot: Gift leaderboard: 1. alice 3, 2. bob 2"), line
    alice.wait_for(r"roombot: Gift leaderboard: 1\. alice 3, 2\. bob 2$")
    assert alice.finish() == 0 and bob.finish() == 0

    # SIGTERM: the bot leaves and disconnects cleanly.
    bot.proc.terminate()
    assert bot.proc.wait(10) == 0
    bot.wait_for("^RoomBot stopped")


def test_cli_walkthrough_script(tmp_path):
    env = dict(os.environ, MQTTCHAT_BIN=cli_bin())
    started = time.monotonic()
    r = subprocess.run(["bash", str(REPO / "examples" / "walkthrough.sh")], capture_output=True, text=True,
                       timeout=90, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    # The two users' sessions ...
    assert re.search(r"\[alice\] \[\d\d:\d\d:\d\d\] bob: hi alice", out), out
    assert re.search(r"\[bob\] \[\d\d:\d\d:\d\d\] alice: sent a gift: rose x2", out), out
    assert re.search(r"\[bob\] \[\d\d:\d\d:\d\d\] \(dm from alice\) ", out), out
    # ... and the raw topics, as mosquitto_sub -v sees them.
    for topic in ("mqttchat/rooms/lobby/messages", "mqttchat/rooms/lobby/members/alice",
                  "mqttchat/users/bob/inbox", "mqttchat/users/alice/status"):
        assert f"[raw] {topic} " in out, (topic, out)
    assert elapsed < 60, elapsed
