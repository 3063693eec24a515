"""The README's first command, `scripts/run.sh`, run as a new user would: it sets up, builds, starts the mini
broker on the shipped default config (`broker-config/mqttchat.conf`, 127.0.0.1:1883, and the WebSocket listener
with the web chat page on 127.0.0.1:8080) and opens a chat session against it. Stdin is a pipe here, so the piped lines are sent and the session ends at EOF, stopping the broker.

The shipped config listens on ports 1883 and 8080 by design, so this test cannot use free ports: it is skipped
when something else holds either (on CI, `scripts/setup.sh` keeps Debian's system mosquitto off that port).
"""
import pathlib
import re
import socket
import subprocess
import time
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED_PORT = 1883
SHIPPED_WEB_PORT = 8080


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def newcomer():
    """A user name of its own, so the history checked is this run's; its default history database
    (`~/.mqttchat/<name>.sqlite`, where the main job keeps it) is removed afterwards."""
    name = f"newcomer{uuid.uuid4().hex[:8]}"
    yield name
    for leftover in (pathlib.Path.home() / ".mqttchat").glob(f"{name}.sqlite*"):
        leftover.unlink()


def test_main_job_chats_on_the_shipped_config_and_stops_the_broker(newcomer):
    for port in (SHIPPED_PORT, SHIPPED_WEB_PORT):
        if not port_is_free(port):
            pytest.skip(f"port {port} is taken: the shipped config listens there")
    # Bounded: set-up and the (usually incremental) build run first; 900 s covers a cold debug build.
    r = subprocess.run(["bash", "scripts/run.sh", "--room", "mainjob", "--name", newcomer], cwd=ROOT,
                       input="hello from the main job\n/history 5\n", capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert f"mqttchat broker listening on 127.0.0.1:{SHIPPED_PORT}" in out, out
    assert "config broker-config/mqttchat.conf" in out, out
    assert f"http://127.0.0.1:{SHIPPED_WEB_PORT}/?room=mainjob&name={newcomer}" in out, out
    assert re.search(rf"(?m)^\* joined #mainjob as {newcomer}", out), out
    # The line went through the broker and came back to the room; the local history holds it, once.
    assert re.search(rf"(?m)^\[[0-9:]+\] {newcomer}: hello from the main job$", out), out
    history = re.search(r"(?m)^\* last (\d+) messages? of #mainjob:$", out)
    assert history and history.group(1) == "1", out
    assert re.search(rf"(?m)^[0-9-]+ [0-9:]+ #mainjob {newcomer}: hello from the main job$", out), out
    # The session's end stopped the broker: the port is released within a bounded wait.
    deadline = time.monotonic() + 5
    while not port_is_free(SHIPPED_PORT) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert port_is_free(SHIPPED_PORT), "the broker outlived the session"
