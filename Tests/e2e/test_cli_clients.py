"""Third-party clients: mosquitto_pub / mosquitto_sub against each broker."""

import signal

import pytest

from conftest import mosquitto_pub, unique


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_pub_sub_round_trip(broker, sub_factory, qos):
    topic = unique("cli")
    sub = sub_factory(broker, topic, count=3, qos=qos)
    sub.wait_subscribed()
    for i in range(3):
        mosquitto_pub(broker, topic, f"hello {i}", qos=qos)
    rows = sub.result()
    assert rows == [(topic, qos, 0, f"hello {i}") for i in range(3)]
    assert sub.proc.returncode == 0


def test_sub_qos_downgraded_to_granted(broker, sub_factory):
    # Delivered QoS = min(published, granted) (MQTT-3.8.4-6).
    topic = unique("cli")
    sub = sub_factory(broker, topic, count=1, qos=1)
    sub.wait_subscribed()
    mosquitto_pub(broker, topic, "two", qos=2)
    assert sub.result() == [(topic, 1, 0, "two")]


def test_retained_with_r(broker, sub_factory):
    topic = unique("cli")
    mosquitto_pub(broker, topic, "sticky", qos=1, retain=True)
    sub = sub_factory(broker, topic, count=1, qos=1)
    assert sub.result() == [(topic, 1, 1, "sticky")]
    # Clearing with an empty retained message (-r -n).
    mosquitto_pub(broker, topic, "", qos=1, retain=True)
    sub = sub_factory(broker, topic, count=1, qos=1, wait=1)
    assert sub.result() == []


def test_will_from_killed_mosquitto_sub(broker, sub_factory):
    # MQTT-3.1.2-8: mosquitto_sub sets a will; killing it (no DISCONNECT) publishes the will.
    will_topic = unique("cliwill")
    watcher = sub_factory(broker, will_topic, count=1, qos=1)
    watcher.wait_subscribed()
    victim = sub_factory(broker, unique("cli"), count=1, qos=0, wait=20,
                         extra=["--will-topic", will_topic, "--will-payload", "bye",
                                "--will-qos", "1", "--will-retain"])
    victim.wait_subscribed()
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(5)
    assert watcher.result() == [(will_topic, 1, 0, "bye")]
    # --will-retain: a later subscriber gets it as a retained message.
    late = sub_factory(broker, will_topic, count=1, qos=1)
    assert late.result() == [(will_topic, 1, 1, "bye")]


def test_no_will_when_mosquitto_sub_exits_cleanly(broker, sub_factory):
    # MQTT-3.1.2-10: mosquitto_sub exiting after -C sends DISCONNECT: the will is discarded.
    will_topic = unique("cliwill")
    topic = unique("cli")
    watcher = sub_factory(broker, will_topic, count=1, qos=1, wait=2)
    watcher.wait_subscribed()
    sub = sub_factory(broker, topic, count=1, qos=0,
                      extra=["--will-topic", will_topic, "--will-payload", "bye"])
    sub.wait_subscribed()
    mosquitto_pub(broker, topic, "one")
    assert sub.result() == [(topic, 0, 0, "one")]
    assert watcher.result() == []


def test_paho_to_mosquitto_sub_and_back(broker, sub_factory, client_factory):
    topic = unique("mixed")
    sub = sub_factory(broker, topic + "/to-cli", count=1, qos=2)
    sub.wait_subscribed()
    paho = client_factory(broker)
    paho.subscribe(topic + "/to-paho", 2)
    paho.publish(topic + "/to-cli", b"from paho", 2)
    mosquitto_pub(broker, topic + "/to-paho", "from cli", qos=2)
    assert sub.result() == [(topic + "/to-cli", 2, 0, "from paho")]
    m = paho.get()
    assert (m.payload, m.qos) == (b"from cli", 2)


def test_wildcard_subscription_with_cli(broker, sub_factory):
    base = unique("cli")
    sub = sub_factory(broker, base + "/+/temp", count=2, qos=0)
    sub.wait_subscribed()
    mosquitto_pub(broker, base + "/kitchen/temp", "21")
    mosquitto_pub(broker, base + "/kitchen/humidity", "40")
    mosquitto_pub(broker, base + "/garage/temp", "12")
    assert sub.result() == [(base + "/kitchen/temp", 0, 0, "21"), (base + "/garage/temp", 0, 0, "12")]
