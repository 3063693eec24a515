"""mosquitto_pub / mosquitto_sub speaking MQTT 5 (-V mqttv5) through each broker: properties set with -D arrive and
are printed by mosquitto_sub's v5 format fields."""

import subprocess

from conftest import unique


def _pub(broker, topic, message, *extra):
    args = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "mqttv5", "-t", topic, "-m", message,
            *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, f"mosquitto_pub failed: {r.stderr}"


def _sub(sub_factory, broker, topic, fmt, count=1):
    # The harness's mosquitto_sub line says -V mqttv311; the -V given after it wins.
    s = sub_factory(broker, topic, count, qos=1, extra=["-V", "mqttv5", "-F", fmt])
    s.wait_subscribed()
    return s


def _rows(s) -> list[str]:
    """The MSG| lines mosquitto_sub printed, once it has exited (-C count reached or -W timeout)."""
    try:
        s.proc.wait(timeout=s.wait_s + 5)
    except subprocess.TimeoutExpired:
        s.kill()
    while True:
        line = s.lines.get(timeout=5)
        if line is None:
            break
        s.all_lines.append(line)
    return [line for line in s.all_lines if line.startswith("MSG|")]


def test_user_property_round_trip(broker, sub_factory):
    topic = unique("cli5")
    s = _sub(sub_factory, broker, topic, "MSG|%t|%P|%p")
    _pub(broker, topic, "hello v5", "-q", "1", "-D", "publish", "user-property", "k", "v",
         "-D", "publish", "user-property", "k", "w")
    rows = _rows(s)
    assert rows == [f"MSG|{topic}|k:v k:w|hello v5"], s.all_lines


def test_content_type_response_topic_and_expiry(broker, sub_factory):
    topic = unique("cli5")
    s = _sub(sub_factory, broker, topic, "MSG|%C|%R|%F|%E|%p")
    _pub(broker, topic, "typed", "-q", "1", "-D", "publish", "content-type", "text/x-test",
         "-D", "publish", "response-topic", "answer/here", "-D", "publish", "payload-format-indicator", "1",
         "-D", "publish", "message-expiry-interval", "60")
    rows = _rows(s)
    assert len(rows) == 1, s.all_lines
    _, ctype, rtopic, pfi, expiry, payload = rows[0].split("|")
    assert (ctype, rtopic, pfi, payload) == ("text/x-test", "answer/here", "1", "typed")
    assert 58 <= int(expiry) <= 60


def test_subscription_identifier_printed(broker, sub_factory):
    topic = unique("cli5")
    s = sub_factory(broker, topic, 1, qos=1,
                    extra=["-V", "mqttv5", "-F", "MSG|%S|%p", "-D", "subscribe", "subscription-identifier", "42"])
    s.wait_subscribed()
    _pub(broker, topic, "numbered", "-q", "1")
    rows = _rows(s)
    assert rows == ["MSG|42|numbered"], s.all_lines
