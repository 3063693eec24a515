"""mosquitto_pub / mosquitto_sub flags on `mqttchat publish` and `mqttchat subscribe`: the will, -c persistent
sessions, --nodelay, TLS (--cafile, --capath, --cert, --key, --insecure, --tls-version), -V (MQTT 5 included),
-x and -D (test_cli_mqtt5.py has the MQTT 5 details). Will and session tests run against mosquitto and our broker; TLS against our broker's TLS
listener with the session's throwaway PKI (scripts/make-test-certs.sh)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from cli_helpers import cli_factory, run_cli, start_subscriber  # noqa: F401
from conftest import managed_brokers, mosquitto_pub, unique
from test_tls import TLSBroker, make_certs, pki  # noqa: F401  (pki is a module-scoped fixture)


# --------------------------------------------------------------------------- will

@pytest.mark.parametrize("command", ["subscribe", "publish"])
def test_cli_will_published_when_killed(broker, client_factory, cli_factory, command):
    """kill -9 leaves no DISCONNECT, so the broker publishes the will: QoS and retain as asked."""
    will_topic = unique("will")
    watcher = client_factory(broker)
    assert watcher.subscribe(will_topic, 1) == 1
    will = ["--will-topic", will_topic, "--will-payload", "gone", "--will-qos", "1", "--will-retain"]
    if command == "subscribe":
        p = start_subscriber(cli_factory, broker, "-t", unique("idle"), *will)
    else:  # -l keeps publish connected while stdin stays open
        p = cli_factory(["publish", "-p", str(broker.port), "-t", unique("lines"), "-l", "-d", *will])
        p.send("first line")
        p.wait_for_err(r"^Published to ")
    watcher.no_message(0.3)
    p.proc.kill()  # SIGKILL
    p.proc.wait(5)
    m = watcher.get()
    assert (m.topic, m.payload, m.qos) == (will_topic, b"gone", 1)
    # --will-retain: a later subscriber gets it as a retained message.
    r = run_cli("subscribe", "-p", str(broker.port), "-t", will_topic, "-q", "1", "-C", "1", "-W", "5",
                "-F", "%r %q %p")
    assert (r.returncode, r.stdout) == (0, "1 1 gone\n"), r.stderr


def test_cli_no_will_after_clean_exit(broker, client_factory):
    will_topic = unique("will")
    watcher = client_factory(broker)
    watcher.subscribe(will_topic, 1)
    r = run_cli("publish", "-p", str(broker.port), "-t", unique("x"), "-m", "bye", "--will-topic", will_topic)
    assert r.returncode == 0, r.stderr
    watcher.no_message(0.5)


@pytest.mark.parametrize("args, message", [
    (["--will-payload", "x"], "need --will-topic"),
    (["--will-topic", "w", "--will-qos", "3"], "--will-qos must be 0, 1 or 2"),
])
def test_cli_will_usage_errors_64(args, message):
    r = run_cli("publish", "-t", "x", "-m", "y", *args)
    assert r.returncode == 64 and message in r.stderr, (r.returncode, r.stderr)


def test_cli_will_topic_with_wildcard_65(broker):
    r = run_cli("publish", "-p", str(broker.port), "-t", "x", "-m", "y", "--will-topic", "a/#")
    assert r.returncode == 65 and "invalid --will-topic 'a/#'" in r.stderr, (r.returncode, r.stderr)


# --------------------------------------------------------------------------- -c persistent session

def test_cli_persistent_session_gets_messages_sent_while_away(broker):
    topic, client_id = unique("persist"), unique("sess").replace("/", "-")
    port = str(broker.port)
    # First visit: subscribe at QoS 1 with -c, then leave (-W ends it cleanly, exit 27).
    r = run_cli("subscribe", "-p", port, "-c", "-i", client_id, "-q", "1", "-t", topic, "-W", "1")
    assert r.returncode == 27, r.stderr
    for i in range(3):
        mosquitto_pub(broker, topic, f"while away {i}", qos=1)
    # Back with the same id: the broker kept the session and delivers what was queued.
    r = run_cli("subscribe", "-p", port, "-c", "-i", client_id, "-q", "1", "-t", topic, "-C", "3", "-W", "5")
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert r.stdout.splitlines() == [f"while away {i}" for i in range(3)]
    # Without -c the same id starts clean: nothing is waiting.
    mosquitto_pub(broker, topic, "lost", qos=1)
    r = run_cli("subscribe", "-p", port, "-i", client_id, "-q", "1", "-t", unique("other"), "-W", "1")
    assert r.returncode == 27 and r.stdout == "", r.stdout


def test_cli_persistent_session_needs_client_id_64():
    r = run_cli("subscribe", "-c", "-t", "x", "-W", "1")
    assert r.returncode == 64 and "-c needs a client id (-i)" in r.stderr, (r.returncode, r.stderr)


# --------------------------------------------------------------------------- --nodelay and -V

@pytest.mark.parametrize("version", ["mqttv311", "311", "mqttv31", "31"])
def test_cli_protocol_versions_and_nodelay(broker, cli_factory, version):
    topic = unique("ver")
    sub = start_subscriber(cli_factory, broker, "-t", topic, "-C", "1", "-V", version, "--nodelay")
    r = run_cli("publish", "-p", str(broker.port), "-t", topic, "-m", f"via {version}", "-V", version, "--nodelay")
    assert r.returncode == 0, r.stderr
    assert sub.finish() == 0 and sub.lines == [f"via {version}"]


@pytest.mark.parametrize("mqtt5", [["-V", "mqttv5"], ["-V", "5"], ["-x", "60"],
                                   ["-D", "connect", "session-expiry-interval", "60"]])
def test_cli_mqtt5_flags_work(broker, cli_factory, mqtt5):
    """The flags MQTT 5 brought (once refused with 64) now connect and deliver, on publish and subscribe alike.
    -x alone stays at 3.1.1, where mosquitto's tools ignore it: we say so on stderr."""
    topic = unique("v5")
    sub = start_subscriber(cli_factory, broker, "-t", topic, "-C", "1", *mqtt5)
    r = run_cli("publish", "-p", str(broker.port), "-t", topic, "-m", "via " + " ".join(mqtt5), *mqtt5)
    assert r.returncode == 0, r.stderr
    assert sub.finish() == 0 and sub.lines == ["via " + " ".join(mqtt5)], sub.err_lines
    warned = "-x applies to MQTT v5 clients only" in r.stderr
    assert warned == (mqtt5[0] == "-x"), r.stderr


def test_cli_unknown_protocol_version_64():
    r = run_cli("publish", "-t", "x", "-m", "y", "-V", "mqttv4")
    assert r.returncode == 64 and "-V must be mqttv5 (5), mqttv311 (311) or mqttv31 (31)" in r.stderr


# --------------------------------------------------------------------------- TLS

@pytest.fixture
def our_tls_broker(tmp_path, request, pki):  # noqa: F811
    """our_tls_broker(**listener_options) -> our broker with one TLS listener (the session PKI)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")

    def make(index: int, **options) -> TLSBroker:
        d = tmp_path / f"tls{index}"
        d.mkdir()
        return TLSBroker("mqttchat", d, options, pki)

    yield from managed_brokers(request, make)


def tls_pubsub(cli_factory, port: int, sub_tls: list[str], pub_tls: list[str], host: str = "127.0.0.1") -> None:
    topic = unique("tls")
    sub = cli_factory(["subscribe", "-h", host, "-p", str(port), "-t", topic, "-C", "1", "-W", "10", "-d", *sub_tls])
    sub.wait_for_err(r"^Subscribed to ")
    r = run_cli("publish", "-h", host, "-p", str(port), "-t", topic, "-m", "secret", *pub_tls)
    assert r.returncode == 0, r.stderr
    assert sub.finish() == 0 and sub.lines == ["secret"], sub.err_lines


@pytest.mark.parametrize("version", [None, "tlsv1.2", "tlsv1.3"])
def test_cli_tls_cafile_and_version(our_tls_broker, cli_factory, pki, version):  # noqa: F811
    broker = our_tls_broker()
    tls = ["--cafile", str(pki / "ca.crt")] + (["--tls-version", version] if version else [])
    tls_pubsub(cli_factory, broker.port, tls, tls)


def test_cli_tls_capath(our_tls_broker, cli_factory, pki, tmp_path):  # noqa: F811
    broker = our_tls_broker()
    capath = tmp_path / "capath"
    capath.mkdir()
    shutil.copy(pki / "ca.crt", capath / "ca.pem")
    subprocess.run(["openssl", "rehash", str(capath)], check=True, capture_output=True, timeout=30)
    tls_pubsub(cli_factory, broker.port, ["--capath", str(capath)], ["--capath", str(capath)])


def test_cli_tls_client_certificate(our_tls_broker, cli_factory, pki):  # noqa: F811
    broker = our_tls_broker(cafile=pki / "ca.crt", require_certificate="true")
    ca = ["--cafile", str(pki / "ca.crt")]
    mutual = ca + ["--cert", str(pki / "alice.crt"), "--key", str(pki / "alice.key")]
    tls_pubsub(cli_factory, broker.port, mutual, mutual)
    r = run_cli("publish", "-p", str(broker.port), "-t", "x", "-m", "no cert", *ca)
    assert r.returncode == 69, (r.returncode, r.stderr)


def test_cli_tls_insecure_skips_the_host_name_check(our_tls_broker, cli_factory, pki):  # noqa: F811
    broker = our_tls_broker()
    ca = ["--cafile", str(pki / "ca.crt")]
    # "127.1" reaches 127.0.0.1, but the certificate names 127.0.0.1 and localhost, not "127.1".
    r = run_cli("publish", "-h", "127.1", "-p", str(broker.port), "-t", "x", "-m", "checked", *ca)
    assert r.returncode == 69, (r.returncode, r.stderr)
    tls_pubsub(cli_factory, broker.port, ca + ["--insecure"], ca + ["--insecure"], host="127.1")


def test_cli_tls_wrong_ca_69(our_tls_broker, tmp_path):
    broker = our_tls_broker()
    other = make_certs(tmp_path / "other", ca_name="some other CA")
    r = run_cli("publish", "-p", str(broker.port), "-t", "x", "-m", "y", "--cafile", str(other / "ca.crt"))
    assert r.returncode == 69 and "TLS" in r.stderr, (r.returncode, r.stderr)


@pytest.mark.parametrize("args, message", [
    (["--cert", "c.crt", "--key", "c.key"], "TLS options need --cafile or --capath"),
    (["--cafile", "ca.crt", "--cert", "c.crt"], "--cert and --key must be given together"),
    (["--cafile", "ca.crt", "--tls-version", "sslv3"], "--tls-version must be tlsv1.3, tlsv1.2 or tlsv1.1"),
    (["--insecure"], "TLS options need --cafile or --capath"),
])
def test_cli_tls_usage_errors_64(args, message):
    r = run_cli("subscribe", "-t", "x", *args)
    assert r.returncode == 64 and message in r.stderr, (r.returncode, r.stderr)


def test_cli_tls_default_port_is_8883(pki):  # noqa: F811
    # Nothing listens on 8883 here (or it refuses us): the message names the port mosquitto's tools would use.
    r = run_cli("publish", "-t", "x", "-m", "y", "--cafile", str(pki / "ca.crt"), "--connect-timeout", "3")
    assert r.returncode == 69 and "127.0.0.1:8883" in r.stderr, (r.returncode, r.stderr)
