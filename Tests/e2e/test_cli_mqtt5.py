"""MQTT 5 on `mqttchat publish` / `mqttchat subscribe`, next to the real mosquitto_pub / mosquitto_sub 2.0.11:
-V mqttv5, -D properties (printed by -F %P %C %D %F %R %S %E the same bytes as mosquitto_sub prints), -x session
expiry with -c, --nl no-local, and a publish refused with a reason code. Runs against mosquitto and our broker."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from cli_helpers import cli_bin, cli_factory, run_cli  # noqa: F401  (cli_factory is a fixture)
from conftest import AuthBroker, Broker, managed_brokers, unique
from test_cli_format import Receiver, receivers  # noqa: F401  (receivers is a fixture)

PROPS = ["-D", "publish", "user-property", "k", "v", "-D", "publish", "user-property", "k2", "v 2",
         "-D", "publish", "content-type", "text/plain", "-D", "publish", "response-topic", "reply/here",
         "-D", "publish", "correlation-data", "corr-1", "-D", "publish", "payload-format-indicator", "1"]
# The brief's format first, then every other deterministic MQTT 5 code with widths and flags.
FORMAT5 = "%P %C %t %p|%D|%F|%R|%S|%A|[%12C][%05F][%12R][%-4S][%3A][%.4C]"


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")


class Receiver5(Receiver):
    """A Receiver whose mosquitto_sub speaks MQTT 5: its debug lines name the client id the broker assigned."""

    DEBUG_LINE = re.compile(rb"(Client [^ \n]+ (sending|received) [^\n]*|Subscribed \(mid: \d+\): [^\n]*)\n")


def both5(broker: Broker, topic: str, count: int, *args: str) -> tuple[Receiver5, Receiver5]:
    common = ["-p", str(broker.port), "-V", "mqttv5", "-t", topic, "-q", "1", "-C", str(count), "-W", "10", "-d",
              *args]
    ours = Receiver5([cli_bin(), "subscribe", *common], debug_on_stdout=False)
    theirs = Receiver5(["stdbuf", "-oL", "mosquitto_sub", *common], debug_on_stdout=True)
    ours.wait_subscribed()
    theirs.wait_subscribed()
    return ours, theirs


def mosquitto_pub5(broker: Broker, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mosquitto_pub", "-p", str(broker.port), "-V", "mqttv5", *args],
                          capture_output=True, text=True, timeout=10)


# --------------------------------------------------------------------------- properties end to end

def test_cli_v5_properties_print_like_mosquitto_sub(broker, receivers):  # noqa: F811
    """mqttchat publish -D … and mosquitto_pub -D … (same properties), each read by mqttchat subscribe -F and
    mosquitto_sub -F at once: the same bytes, with the properties really there."""
    need("mosquitto_sub")
    topic = unique("v5props")
    ours, theirs = both5(broker, topic, 3, "-F", FORMAT5, "-D", "subscribe", "subscription-identifier", "7")
    receivers += [ours, theirs]
    r = run_cli("publish", "-p", str(broker.port), "-V", "mqttv5", "-q", "1", "-t", topic, "-m", "from us", *PROPS)
    assert r.returncode == 0, r.stderr
    r = mosquitto_pub5(broker, "-q", "1", "-t", topic, "-m", "from them", *PROPS)
    assert r.returncode == 0, r.stderr
    r = mosquitto_pub5(broker, "-q", "1", "-t", topic, "-m", "bare")  # no properties: blanks
    assert r.returncode == 0, r.stderr
    expected = theirs.output()
    lines = expected.decode().splitlines()
    assert lines[0] == (f"k:v k2:v 2 text/plain {topic} from us|corr-1|1|reply/here|7||"
                        "[  text/plain][00001][  reply/here][7   ][   ][text]"), lines
    assert lines[1].startswith(f"k:v k2:v 2 text/plain {topic} from them|corr-1|1|reply/here|7|"), lines
    assert lines[2] == f"  {topic} bare||||7||[            ][00000][][7   ][   ][]", lines
    assert ours.output() == expected


def test_cli_v5_message_expiry_and_json(broker, receivers):  # noqa: F811
    """%E is what is left of the expiry (the broker counts it down); %j carries a "properties" object."""
    need("mosquitto_sub")
    topic = unique("v5json")
    ours, theirs = both5(broker, topic, 1, "-F", "%E|%j")
    receivers += [ours, theirs]
    r = run_cli("publish", "-p", str(broker.port), "-q", "1", "-t", topic, "-m", "expiring",  # -D implies -V mqttv5
                "-D", "publish", "message-expiry-interval", "3600", "-D", "publish", "content-type", "a/b",
                "-D", "publish", "user-property", "who", "us")
    assert r.returncode == 0, r.stderr
    outputs = {"ours": ours.output().decode(), "theirs": theirs.output().decode()}
    for who, out in outputs.items():
        expiry, js = out.rstrip("\n").split("|", 1)
        assert expiry in ("3599", "3600"), (who, out)
        stripped = re.sub(r'"tst":"[^"]*"', '"tst":""', js).replace(f'"message-expiry-interval":{expiry}', "E")
        outputs[who] = stripped
    assert '"properties":{"content-type":"a/b","user-properties":{"who":"us"},E}' in outputs["theirs"], outputs
    assert outputs["ours"] == outputs["theirs"]


# --------------------------------------------------------------------------- refusals

@pytest.fixture
def acl_broker(broker_kind, tmp_path, request):
    """A broker whose acl_file lets anonymous clients use open/# and nothing else."""

    def make(index: int) -> Broker:
        d = tmp_path / f"acl{index}"
        d.mkdir()
        (d / "acl").write_text("topic readwrite open/#\n")
        return AuthBroker(broker_kind, d, {"allow_anonymous": "true", "acl_file": d / "acl"})

    yield from managed_brokers(request, make)


@pytest.mark.parametrize("qos", ["1", "2"])
def test_cli_v5_publish_refused_by_acl_exits_77_with_reason(acl_broker, qos):
    need("mosquitto_pub")
    broker = acl_broker()
    topic = "secret/" + unique("x")
    r = run_cli("publish", "-p", str(broker.port), "-V", "mqttv5", "-q", qos, "-t", topic, "-m", "no")
    assert r.returncode == 77, (r.returncode, r.stderr)
    assert f"Publish to '{topic}' refused: Not authorized (0x87)" in r.stderr, r.stderr
    # mosquitto_pub gets the same reason code (it only warns, and exits 0).
    theirs = mosquitto_pub5(broker, "-q", qos, "-t", topic, "-m", "no")
    assert "Not authorized" in theirs.stderr, theirs.stderr
    # Allowed topics still work, and at 3.1.1 there is no reason code: the broker drops it silently.
    r = run_cli("publish", "-p", str(broker.port), "-V", "mqttv5", "-q", qos, "-t", "open/x", "-m", "yes")
    assert r.returncode == 0, r.stderr
    r = run_cli("publish", "-p", str(broker.port), "-q", qos, "-t", topic, "-m", "dropped")
    assert r.returncode == 0, r.stderr


def test_cli_v5_subscription_refused_exits_77_with_reason(acl_broker, broker_kind):
    broker = acl_broker()
    r = run_cli("subscribe", "-p", str(broker.port), "-V", "mqttv5", "-t", "secret/#", "-W", "2")
    if broker_kind == "mosquitto":  # mosquitto grants every filter and filters at delivery
        assert r.returncode == 27, (r.returncode, r.stderr)
    else:
        assert r.returncode == 77, (r.returncode, r.stderr)
        assert "Subscription to 'secret/#' refused: Not authorized (0x87)" in r.stderr, r.stderr


# --------------------------------------------------------------------------- -x session expiry

def session_round(broker: Broker, tool: list[str], client_id: str, topic: str, expiry: str, count: int):
    """Subscribe with -c -x EXPIRY, leave, get 2 messages published while away, come back: what is delivered."""
    port = str(broker.port)
    first = [*tool, "-p", port, "-V", "mqttv5", "-c", "-x", expiry, "-i", client_id, "-q", "1", "-t", topic]
    r = subprocess.run(first + ["-W", "1"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 27, (tool, r.returncode, r.stderr)
    for i in range(2):
        assert mosquitto_pub5(broker, "-q", "1", "-t", topic, "-m", f"away {i}").returncode == 0
    back = [*tool, "-p", port, "-V", "mqttv5", "-c", "-x", expiry, "-i", client_id, "-q", "1", "-t", topic]
    r = subprocess.run(back + ["-C", str(max(count, 1)), "-W", "2" if count == 0 else "8"],
                       capture_output=True, text=True, timeout=20)
    return r.returncode, r.stdout.splitlines()


@pytest.mark.parametrize("expiry, delivered", [("60", ["away 0", "away 1"]), ("0", [])])
def test_cli_v5_session_expiry_like_mosquitto_sub(broker, expiry, delivered):
    need("mosquitto_sub")
    topic = unique("v5sess")
    tools = {"ours": [cli_bin(), "subscribe"], "theirs": ["mosquitto_sub"]}
    results = {who: session_round(broker, tool, unique(who).replace("/", "-"), topic + who, expiry, len(delivered))
               for who, tool in tools.items()}
    expected_rc = 0 if delivered else 27
    assert results["ours"] == results["theirs"] == (expected_rc, delivered), results


def test_cli_v5_never_expiring_session_needs_client_id_64():
    need("mosquitto_sub")
    theirs = subprocess.run(["mosquitto_sub", "-V", "mqttv5", "-c", "-t", "x"], capture_output=True, text=True,
                            timeout=10)
    assert theirs.returncode != 0 and "client id" in theirs.stderr
    for extra in (["-c"], ["-x", "-1"], ["-x", "∞"]):
        r = run_cli("subscribe", "-V", "mqttv5", *extra, "-t", "x", "-W", "1")
        assert r.returncode == 64 and "needs a client id (-i)" in r.stderr, (extra, r.returncode, r.stderr)


# --------------------------------------------------------------------------- --nl no local

@pytest.mark.parametrize("no_local", [True, False])
def test_cli_v5_no_local_drops_own_will(broker, cli_factory, no_local):
    """The one message a subscriber publishes itself is its will: with --nl the broker does not queue it back into
    the subscriber's own persistent session; without --nl it does. Messages from others arrive either way."""
    port, topic, client_id = str(broker.port), unique("nl"), unique("nl").replace("/", "-")
    session = ["-V", "mqttv5", "-c", "-x", "60", "-i", client_id, "-q", "1", "-t", topic]
    nl = ["--nl"] if no_local else []
    sub = cli_factory(["subscribe", "-p", port, "-d", *session, *nl, "--will-topic", topic, "--will-payload",
                       "my own will", "--will-qos", "1"])
    sub.wait_for_err(r"^Subscribed to ")
    # QoS 0, so a PUBACK lost to the kill below cannot bring it back on the reconnect.
    assert mosquitto_pub5(broker, "-q", "0", "-t", topic, "-m", "from another").returncode == 0
    sub.wait_for(r"^from another$")
    sub.proc.kill()  # no DISCONNECT: the broker publishes the will, while the session lives on (-x 60)
    sub.proc.wait(5)
    r = run_cli("subscribe", "-p", port, *session, "-C", "1", "-W", "3")
    if no_local:
        assert (r.returncode, r.stdout) == (27, ""), (r.returncode, r.stdout, r.stderr)
    else:
        assert (r.returncode, r.stdout) == (0, "my own will\n"), (r.returncode, r.stdout, r.stderr)


# --------------------------------------------------------------------------- will properties, retain as published

def test_cli_v5_will_properties_reach_mosquitto_sub(broker, cli_factory, receivers):  # noqa: F811
    """-D will …: the will carries its properties; mosquitto_sub and mqttchat subscribe print them alike."""
    need("mosquitto_sub")
    topic = unique("v5will")
    ours, theirs = both5(broker, topic, 1, "-F", "%P|%C|%F|%p")
    receivers += [ours, theirs]
    p = cli_factory(["subscribe", "-p", str(broker.port), "-d", "-t", unique("idle"), "--will-topic", topic,
                     "--will-payload", "gone", "--will-qos", "1", "-D", "will", "content-type", "text/plain",
                     "-D", "will", "user-property", "why", "killed", "-D", "will", "payload-format-indicator", "1"])
    p.wait_for_err(r"^Subscribed to ")
    p.proc.kill()
    p.proc.wait(5)
    expected = theirs.output()
    assert expected == b"why:killed|text/plain|1|gone\n", expected
    assert ours.output() == expected


def test_cli_v5_retain_as_published_like_mosquitto_sub(broker, receivers):  # noqa: F811
    """--retain-as-published: a live message published with retain keeps retain 1 (without it, 0)."""
    need("mosquitto_sub")
    topic = unique("v5rap")
    ours, theirs = both5(broker, topic, 1, "-F", "%r %p", "--retain-as-published")
    receivers += [ours, theirs]
    plain_ours, plain_theirs = both5(broker, topic, 1, "-F", "%r %p")
    receivers += [plain_ours, plain_theirs]
    assert mosquitto_pub5(broker, "-q", "1", "-r", "-t", topic, "-m", "kept").returncode == 0
    assert ours.output() == theirs.output() == b"1 kept\n"
    assert plain_ours.output() == plain_theirs.output() == b"0 kept\n"


# --------------------------------------------------------------------------- usage errors

MOSQUITTO_WORDS = [
    (["-D", "publish", "session-expiry-interval", "5"],
     "session-expiry-interval property not allowed for publish in --property argument."),
    (["-D", "bogus", "content-type", "x"], "Invalid command given in --property argument."),
    (["-D", "publish", "nope", "x"], "Invalid property name given in --property argument."),
    (["-D", "publish", "payload-format-indicator", "300"],
     "Property value (300) out of range for property payload-format-indicator."),
    (["-D", "publish", "user-property", "k"], "--property argument given but not enough arguments specified."),
    (["-D", "publish", "subscription-identifier", "3"],
     "subscription-identifier property not supported for publish in --property argument."),
    (["-x", "abc"], "session-expiry-interval not a number"),
]


@pytest.mark.parametrize("args, words", MOSQUITTO_WORDS)
def test_cli_v5_flag_errors_in_mosquitto_words_64(args, words):
    need("mosquitto_pub")
    theirs = subprocess.run(["mosquitto_pub", "-t", "x", "-m", "y", *args], capture_output=True, text=True,
                            timeout=10)
    assert theirs.returncode != 0 and words in theirs.stderr, theirs.stderr
    r = run_cli("publish", "-t", "x", "-m", "y", *args)
    assert r.returncode == 64 and words in r.stderr, (r.returncode, r.stderr)


@pytest.mark.parametrize("command, args, words", [
    ("publish", ["-D", "publish", "topic-alias", "3"], "not supported by mqttchat publish"),
    ("publish", ["-D", "connect", "receive-maximum", "5"], "not supported by mqttchat publish"),
    ("publish", ["-D", "subscribe", "subscription-identifier", "5"], "it subscribes to nothing"),
    ("subscribe", ["-D", "publish", "content-type", "x"], "it publishes nothing"),
    ("subscribe", ["-D", "subscribe", "subscription-identifier", "0"], "subscription-identifier must be 1 to"),
    ("publish", ["-D", "publish", "payload-format-indicator", "2"], "payload-format-indicator must be 0"),
    ("publish", ["-D", "will", "content-type", "x"], "-D will … needs --will-topic"),
    ("publish", ["-V", "mqttv311", "-D", "publish", "content-type", "x"], "use -V mqttv5 (or no -V)"),
    ("publish", ["-x", "60", "-D", "connect", "session-expiry-interval", "60"], "give the session expiry interval once"),
    ("publish", ["-x", "4294967296"], "session-expiry-interval out of range"),
    ("publish", ["-V", "mqttv4"], "-V must be mqttv5 (5), mqttv311 (311) or mqttv31 (31)"),
    ("subscribe", ["--nl"], "--nl and --retain-handling need MQTT 5"),
    ("subscribe", ["-V", "5", "--retain-handling", "3"], "--retain-handling must be 0, 1 or 2"),
])
def test_cli_v5_flag_errors_64(command, args, words):
    payload = ["-m", "y"] if command == "publish" else []
    r = run_cli(command, "-t", "x", *payload, *args)
    assert r.returncode == 64 and words in r.stderr, (r.returncode, r.stderr)
