"""Exit codes and messages of the `mqttchat` client commands when things go wrong."""

import pytest

from cli_helpers import auth_broker, cli_factory, run_cli, start_chat  # noqa: F401
from conftest import free_port, unique


@pytest.mark.parametrize("command", [
    ["publish", "-t", "x", "-m", "hi"],
    ["subscribe", "-t", "x", "-W", "5"],
    ["chat", "--room", "lobby", "--name", "alice", "--history-db", "{tmp}/h.sqlite"],
])
def test_cli_unreachable_broker_69(command, tmp_path):
    port = free_port()  # bound and closed again: nothing listens there
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    r = run_cli(*args, "-p", str(port))
    assert r.returncode == 69, (r.returncode, r.stderr)
    assert f"127.0.0.1:{port}" in r.stderr and "refused" in r.stderr


@pytest.mark.parametrize("args", [
    ["chat", "--room", "a/b", "--name", "alice"],
    ["chat", "--room", "lobby", "--name", "al+ice"],
    ["chat", "--room", "lobby", "--name", "alice", "-i", "#"],
    ["publish", "--room", "a#", "--name", "alice", "--chat-text", "hi"],
    ["publish", "-t", "a/+/c", "-m", "hi"],
])
def test_cli_invalid_names_65(broker, args):
    r = run_cli(*args, "-p", str(broker.port))
    assert r.returncode == 65, (r.returncode, r.stderr)
    assert "invalid" in r.stderr


def test_cli_invalid_subscription_filter_65(broker):
    r = run_cli("subscribe", "-p", str(broker.port), "-t", "a/#/b", "-W", "5")
    assert r.returncode == 65, (r.returncode, r.stderr)
    assert "invalid topic 'a/#/b'" in r.stderr


@pytest.mark.parametrize("topic_filter, reason", [
    ("a/#/b", "'#' must be the last level of a filter"),
    ("a/b#", "'#' must be a whole level (e.g. 'a/#'), not part of 'b#'"),
    ("a/b+/c", "'+' must be a whole level (e.g. 'a/+/b'), not part of 'b+'"),
    ("", "it is empty"),
])
def test_cli_invalid_subscription_filter_gives_reason_before_connecting(topic_filter, reason):
    port = free_port()  # nothing listens: the filter is refused before any connection attempt
    r = run_cli("subscribe", "-p", str(port), "-t", topic_filter, "-W", "5")
    assert r.returncode == 65, (r.returncode, r.stderr)
    assert r.stderr.strip() == f"mqttchat subscribe: invalid topic '{topic_filter}': {reason}"


@pytest.mark.parametrize("args", [
    ["publish", "-m", "no topic"],
    ["publish", "-t", "x", "-m", "a", "-n"],
    ["publish", "-t", "x", "-m", "a", "-q", "3"],
    ["publish", "--chat-text", "hi", "--name", "alice"],
    ["publish", "--delimited", "-t", "x"],
    ["subscribe", "-C", "1"],
    ["subscribe", "-t", "x", "--format", "xml"],
    ["chat", "--room", "lobby"],
    ["history"],
    ["publish", "-t", "x", "-m", "a", "--bogus"],
])
def test_cli_usage_64(args):
    r = run_cli(*args)
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert r.stderr.strip()


def test_cli_missing_file_66(tmp_path):
    r = run_cli("publish", "-t", "x", "-f", str(tmp_path / "nope"), "-p", str(free_port()))
    assert r.returncode == 66 and "cannot read file" in r.stderr


def test_cli_history_without_database_66(tmp_path):
    r = run_cli("history", "--name", "nobody", "--db", str(tmp_path / "none.sqlite"))
    assert r.returncode == 66 and "no history database" in r.stderr
    assert not (tmp_path / "none.sqlite").exists()


def test_cli_auth_refused_77_and_accepted(auth_broker, cli_factory, tmp_path):
    port = str(auth_broker.port)
    for creds in (["-u", "alice", "-P", "wrong"], ["-u", "mallory", "-P", "s3cret"], []):
        r = run_cli("publish", "-p", port, "-t", "x", "-m", "hi", *creds)
        assert r.returncode == 77, (creds, r.returncode, r.stderr)
        assert "refused the connection" in r.stderr
    r = run_cli("subscribe", "-p", port, "-t", "x", "-W", "5", "-u", "alice", "-P", "nope")
    assert r.returncode == 77, r.stderr
    r = run_cli("chat", "-p", port, "--room", "lobby", "--name", "alice", "-P", "nope", "-u", "alice",
                "--history-db", str(tmp_path / "a.sqlite"), input="")
    assert r.returncode == 77, r.stderr

    # The right password works for every command.
    topic = unique("auth")
    sub = cli_factory(["subscribe", "-p", port, "-u", "alice", "-P", "s3cret", "-t", topic, "-C", "1", "-d"])
    sub.wait_for_err(r"^Subscribed")
    r = run_cli("publish", "-p", port, "-u", "alice", "-P", "s3cret", "-t", topic, "-m", "let me in")
    assert r.returncode == 0, r.stderr
    assert sub.finish() == 0 and sub.lines == ["let me in"]
    r = run_cli("chat", "-p", port, "--room", "lobby", "--name", "alice", "-u", "alice", "-P", "s3cret",
                "--history-db", str(tmp_path / "a.sqlite"), "--linger", "0", input="hello\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].endswith("alice: hello")
