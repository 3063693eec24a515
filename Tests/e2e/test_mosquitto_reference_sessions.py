"""Sessions, persistence across restarts and message expiry as mosquitto's own broker tests check them
(eclipse/mosquitto `test/broker/` 02, 03, 07, 11 and 12), written afresh and run against both brokers. See
test_mosquitto_reference.py and docs/testing.md for the map."""

from __future__ import annotations

import time

import pytest

import mqtt5_raw as m5
import mqtt_raw as m3
from conftest import Broker, unique
from test_mosquitto_reference import VERSIONS, clients, codec, raw  # noqa: F401 (fixture)

HOUR = 3600


def persistent_broker(start_broker, tmp_path) -> Broker:
    data = tmp_path / "data"
    data.mkdir()
    # `user root`: mosquitto started as root otherwise drops to the `mosquitto` user, which cannot write here.
    return start_broker(persistence="true", persistence_location=f"{data}/", user="root")


def connect_persistent(broker: Broker, version: int, client_id: str, made: list, clean: bool = False):
    """Connects with a session that outlives the connection (3.1.1 clean session 0; MQTT 5 an hour's expiry)
    unless `clean`; returns the client and whether a session was present."""
    c = raw(broker, version, made)
    if version == 4:
        return c, c.connect_ok(client_id, clean=clean)
    props = None if clean else {m5.SESSION_EXPIRY_INTERVAL: HOUR}
    return c, c.connect_ok(client_id, clean_start=clean, props=props).session_present


def subscribe(client, version: int, topic: str, qos: int) -> None:
    client.send(codec(version).subscribe(1, [(topic, qos)]))
    client.expect(m3.SUBACK)


def publish_qos1(broker: Broker, version: int, topic: str, payload: bytes, made: list, props=None) -> None:
    c = raw(broker, version, made)
    c.connect(unique("pub"))
    if version == 4:
        c.publish_qos1(topic, payload, pid=9)
    else:
        assert c.publish(topic, payload, 1, props=props).reason in (m5.SUCCESS, m5.NO_MATCHING_SUBSCRIBERS)
    c.close()


def receive(client, version: int, timeout: float = 5.0):
    message = client.expect(m3.PUBLISH, timeout)
    if message.qos == 1:
        client.send(codec(version).puback(message.pid))
    return message


@pytest.mark.parametrize("version", VERSIONS)
def test_session_flip_flop_between_clean_and_persistent(broker, clients, version):
    """02-subscribe-persistence-flipflop: a persistent session keeps messages while away; connecting clean
    discards it; connecting persistent again starts empty and then queues again."""
    client_id, topic = unique("flip"), unique("flip")
    c, present = connect_persistent(broker, version, client_id, clients)
    assert not present
    subscribe(c, version, topic, 1)
    c.close()
    publish_qos1(broker, version, topic, b"kept", clients)
    c, present = connect_persistent(broker, version, client_id, clients)
    assert present
    assert receive(c, version).payload == b"kept"
    c.close()
    c, present = connect_persistent(broker, version, client_id, clients, clean=True)
    assert not present
    c.send(codec(version).disconnect() if version == 5 else m3.DISCONNECT_BYTES)
    c.close()
    publish_qos1(broker, version, topic, b"lost with the session", clients)
    c, present = connect_persistent(broker, version, client_id, clients)
    assert not present
    c.expect_nothing(0.5)
    subscribe(c, version, topic, 1)
    c.close()
    publish_qos1(broker, version, topic, b"queued again", clients)
    c, present = connect_persistent(broker, version, client_id, clients)
    assert present
    assert receive(c, version).payload == b"queued again"


@pytest.mark.parametrize("version", VERSIONS)
def test_subscriptions_and_queued_messages_survive_a_restart(start_broker, tmp_path, clients, version):
    """02-subpub-recover-subscriptions, 11-persistent-subscription: with persistence on, an offline session's
    subscription and its queued QoS 1 message survive a broker restart."""
    b = persistent_broker(start_broker, tmp_path)
    client_id, topic = unique("rec"), unique("rec")
    c, _ = connect_persistent(b, version, client_id, clients)
    subscribe(c, version, topic, 1)
    c.close()
    publish_qos1(b, version, topic, b"before restart", clients)
    b.restart()
    c, present = connect_persistent(b, version, client_id, clients)
    assert present
    assert receive(c, version).payload == b"before restart"
    c.close()
    publish_qos1(b, version, topic, b"after restart", clients)
    c, present = connect_persistent(b, version, client_id, clients)
    assert present
    assert receive(c, version).payload == b"after restart"


def test_v5_subscription_options_and_properties_survive_a_restart(start_broker, tmp_path, clients):
    """11-persistent-subscription-v5, 11-persistent-subscription-no-local, 11-subscription-id, 11-pub-props: after
    a restart the session's subscription keeps its identifier and No Local, and a queued message keeps its
    properties in order and its Message Expiry Interval (the time left)."""
    b = persistent_broker(start_broker, tmp_path)
    client_id, topic = unique("p5"), unique("p5")
    c, _ = connect_persistent(b, 5, client_id, clients)
    assert c.subscribe([(topic, m5.subscription_options(1, no_local=True))],
                       props={m5.SUBSCRIPTION_IDENTIFIER: 42}) == [1]
    c.close()
    props = [(m5.CONTENT_TYPE, "text/x"), (m5.USER_PROPERTY, ("k", "v")), (m5.RESPONSE_TOPIC, "reply/here"),
             (m5.CORRELATION_DATA, b"cd"), (m5.USER_PROPERTY, ("k", "w")), (m5.MESSAGE_EXPIRY_INTERVAL, 100)]
    publish_qos1(b, 5, topic, b"with properties", clients, props=props)
    b.restart()
    c, present = connect_persistent(b, 5, client_id, clients)
    assert present
    message = c.next_publish()
    assert message.payload == b"with properties"
    assert message.props.get(m5.SUBSCRIPTION_IDENTIFIER) == 42, message
    assert message.props.get(m5.CONTENT_TYPE) == "text/x"
    assert message.props.get(m5.RESPONSE_TOPIC) == "reply/here"
    assert message.props.get(m5.CORRELATION_DATA) == b"cd"
    assert message.props.user == [("k", "v"), ("k", "w")]
    assert 0 < message.props.get(m5.MESSAGE_EXPIRY_INTERVAL) <= 100, message
    c.expect_nothing(0.5)
    c.publish(topic, b"own", 1)  # No Local still holds
    c.expect_nothing(0.5)


def test_message_that_expired_across_a_restart_is_dropped(start_broker, tmp_path, clients, request, broker_kind):
    """11-message-expiry: a queued message whose expiry passes while the broker is down is not delivered after the
    restart; the one queued behind it is."""
    if broker_kind == "mosquitto":
        request.node.add_marker(pytest.mark.xfail(
            strict=False, reason="mosquitto 2.0.11 sometimes delivers it after the restart, with no expiry property "
                                 "(2 runs in 14 here)"))
    b = persistent_broker(start_broker, tmp_path)
    client_id, topic = unique("exp"), unique("exp")
    c, _ = connect_persistent(b, 5, client_id, clients)
    assert c.subscribe([(topic, 1)]) == [1]
    c.close()
    publish_qos1(b, 5, topic, b"expires", clients, props={m5.MESSAGE_EXPIRY_INTERVAL: 1})
    publish_qos1(b, 5, topic, b"lasting", clients, props={m5.MESSAGE_EXPIRY_INTERVAL: 600})
    b.stop()
    time.sleep(2.5)  # past the first message's expiry (mosquitto counts it in whole seconds)
    b.start()
    c, present = connect_persistent(b, 5, client_id, clients)
    assert present
    assert c.next_publish().payload == b"lasting"
    c.expect_nothing(0.5)


def test_message_expires_while_waiting_for_the_inflight_window(broker, clients, departure):
    """03-publish-qos1-max-inflight-expire: a message queued behind a full window (the client's Receive Maximum 1)
    whose expiry passes before the window opens is dropped, not delivered late, and the next one follows."""
    departure("mosquitto", "mosquitto 2.0.11 drops the expired message but then sends nothing more until another "
                           "message arrives, which it delivers before the one that was waiting (out of order)")
    topic = unique("window")
    c = raw(broker, 5, clients)
    c.connect_ok(unique("sub"), props={m5.RECEIVE_MAXIMUM: 1})
    assert c.subscribe([(topic, 1)]) == [1]
    publisher = raw(broker, 5, clients)
    publisher.connect_ok(unique("pub"))
    publisher.publish(topic, b"first", 1)
    publisher.publish(topic, b"short-lived", 1, props={m5.MESSAGE_EXPIRY_INTERVAL: 1})
    publisher.publish(topic, b"lasting", 1)
    first = c.next_publish(ack=False)
    assert first.payload == b"first"
    time.sleep(2)  # hold the window shut past the second message's expiry
    c.send(m5.puback(first.pid))
    assert c.next_publish().payload == b"lasting"
    c.expect_nothing(0.5)


@pytest.mark.parametrize("qos", [1, 2])
def test_message_over_the_clients_maximum_packet_size_is_skipped(broker, clients, qos):
    """12-prop-maximum-packet-size-publish-qos1/qos2: a message too big for the subscriber's Maximum Packet Size is
    not sent to it (3.1.2.11.4), and does not hold up the next one."""
    topic = unique("mps")
    c = raw(broker, 5, clients)
    c.connect_ok(unique("sub"), props={m5.MAXIMUM_PACKET_SIZE: 200})
    assert c.subscribe([(topic, qos)]) == [qos]
    publisher = raw(broker, 5, clients)
    publisher.connect_ok(unique("pub"))
    publisher.publish(topic, b"x" * 500, qos)
    publisher.publish(topic, b"small", qos)
    message = c.next_publish()
    assert (message.payload, message.qos) == (b"small", qos)
    c.expect_nothing(0.5)


def test_will_delay_survives_a_restart(start_broker, tmp_path, clients):
    """07-will-delay-recover: a session whose will is delayed still publishes the will after a broker restart once
    the delay has passed, if the client does not come back."""
    b = persistent_broker(start_broker, tmp_path)
    topic, watcher_id = unique("wd"), unique("watch")
    watcher, _ = connect_persistent(b, 5, watcher_id, clients)
    assert watcher.subscribe([(topic, 1)]) == [1]
    watcher.close()
    dying = raw(b, 5, clients)
    dying.connect_ok(unique("dying"), clean_start=False, props={m5.SESSION_EXPIRY_INTERVAL: HOUR},
                     will=(topic, b"gone", 1, False), will_props={m5.WILL_DELAY_INTERVAL: 3})
    dying.close()
    b.restart()
    # The watcher's own session queues the will whenever it is published, before or after it reconnects.
    watcher, present = connect_persistent(b, 5, watcher_id, clients)
    assert present
    assert watcher.next_publish(timeout=10).payload == b"gone"
