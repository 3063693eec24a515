"""Resource limits that protect the broker from one hostile client.

MQTT sets no limit on topic depth; a broker that walks its subscription tree level by level
must bound it, or one SUBSCRIBE makes every later match (and the subscriber's own
disconnect) arbitrarily deep. These tests hold both brokers to "refuse or survive"; ours,
like mosquitto, closes the connection of a client whose topic or filter is deeper than
`max_topic_levels` (hostile input).
"""
import pytest

import mqtt_raw as raw
from conftest import unique


def _round_trip_works(broker) -> None:
    with broker.raw() as sub, broker.raw() as pub:
        sub.connect_ok(unique("lim-sub"))
        topic = unique("limits/after")
        assert sub.subscribe([(topic, 1)]) == [1]
        pub.connect_ok(unique("lim-pub"))
        pub.publish_qos1(topic, b"still here")
        assert sub.next_publish().payload == b"still here"


def test_very_deep_filter_then_disconnect_leaves_broker_serving(broker):
    deep = "/".join(["+"] * 20000)
    with broker.raw() as hostile:
        hostile.connect_ok(unique("deep"))
        try:
            codes = hostile.subscribe([(deep, 0)])
            # Refused (0x80) or, if accepted, the broker must cope with it from now on.
            assert len(codes) == 1 and codes[0] in (0, 0x80)
            # A publish with many levels must not make matching walk the deep filter either.
            hostile.send(raw.publish("/".join(["x"] * 30000), b"deep", 0))
            hostile.drain(0.3)
        except raw.Closed:
            pass  # mosquitto closes the connection of a client whose filter is too deep: also safe.
    assert broker.alive()
    _round_trip_works(broker)
    assert broker.alive()


@pytest.mark.parametrize("limit", [None, 4])
def test_topics_deeper_than_max_topic_levels_close_the_connection(start_broker, broker_kind, limit):
    if broker_kind != "mqttchat":
        pytest.skip("max_topic_levels is an mqttchat option (mosquitto has no configurable depth)")
    broker = start_broker() if limit is None else start_broker(max_topic_levels=limit)
    allowed = 128 if limit is None else limit  # the default is 128
    ok = "/".join(["a"] * allowed)
    too_deep = "/".join(["a"] * (allowed + 1))
    with broker.raw() as client:
        client.connect_ok(unique("levels"))
        assert client.subscribe([(ok, 1)]) == [1]
        client.publish_qos1(ok, b"at the limit")
        assert client.next_publish().payload == b"at the limit"
        # One filter too deep in a SUBSCRIBE closes the connection, whatever else the packet holds.
        client.send(raw.subscribe(2, [(ok, 1), (too_deep, 1)]))
        assert client.closed_within(3)
    with broker.raw() as client:
        client.connect_ok(unique("levels"))
        client.send(raw.publish(too_deep, b"too deep", 1, 3))
        assert client.closed_within(3)
    assert broker.alive()
    _round_trip_works(broker)
