"""$SYS topics and '$'-topic matching: MQTT 3.1.1 section 4.7.2."""

import time

import mqtt_raw as raw
from conftest import unique


def _collect(c, seconds):
    out = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            p = c.recv(max(0.01, deadline - time.monotonic()))
        except TimeoutError:
            break
        if p.ptype == raw.PUBLISH:
            out[p.topic] = p.payload
    return out


def test_sys_broker_topics_published(broker, raw_factory):
    # 4.7.2 names $SYS/ as the conventional prefix for server information; mosquitto and mqttchat
    # publish $SYS/broker/... every sys_interval (1 s here).
    c = raw_factory(broker)
    c.connect_ok("sys-watch")
    c.subscribe([("$SYS/broker/uptime", 0), ("$SYS/broker/clients/connected", 0),
                 ("$SYS/broker/version", 0)])
    seen = _collect(c, 2.5)
    assert "$SYS/broker/uptime" in seen, seen
    assert seen["$SYS/broker/uptime"].split()[0].isdigit()
    assert "$SYS/broker/clients/connected" in seen, seen
    assert int(seen["$SYS/broker/clients/connected"]) >= 1
    assert "$SYS/broker/version" in seen, seen


def test_sys_clients_connected_tracks_connections(broker, raw_factory):
    watch = raw_factory(broker)
    watch.connect_ok("sys-count")
    extra = [raw_factory(broker) for _ in range(3)]
    for i, e in enumerate(extra):
        e.connect_ok(f"sys-extra-{i}")
    watch.subscribe([("$SYS/broker/clients/connected", 0)])
    deadline = time.monotonic() + 4
    value = None
    while time.monotonic() < deadline:
        seen = _collect(watch, 1.2)
        value = seen.get("$SYS/broker/clients/connected", value)
        if value is not None and int(value) >= 4:
            break
    assert value is not None and int(value) >= 4, value


def test_hash_does_not_match_sys(broker, raw_factory):
    # MQTT-4.7.2-1: a filter starting with a wildcard must not match topics starting with '$'.
    c = raw_factory(broker)
    c.connect_ok("hash-no-sys")
    c.subscribe([("#", 0)])
    topics = set(_collect(c, 2.2))
    assert not any(t.startswith("$") for t in topics), topics


def test_plus_first_level_does_not_match_sys(broker, raw_factory):
    # MQTT-4.7.2-1: '+/broker/...' does not match '$SYS/broker/...'.
    c = raw_factory(broker)
    c.connect_ok("plus-no-sys")
    c.subscribe([("+/broker/uptime", 0), ("+/broker/#", 0)])
    assert _collect(c, 2.2) == {}


def test_dollar_topics_from_clients_excluded_from_wildcard_first_filters(broker, raw_factory):
    # MQTT-4.7.2-1 for any '$' topic, not just $SYS: '#' and '+/x' don't match '$app/x', while an
    # explicit '$app/#' does. (Publishing to '$app/x' is allowed for clients in 3.1.1.)
    wild, explicit, pub = raw_factory(broker), raw_factory(broker), raw_factory(broker)
    wild.connect_ok("dollar-wild")
    explicit.connect_ok("dollar-explicit")
    pub.connect_ok("dollar-pub")
    name = unique("$app").replace("/", "-")
    wild.subscribe([("#", 0), ("+/x", 0)])
    explicit.subscribe([(name + "/#", 0)])
    pub.publish_qos1(name + "/x", b"dollar", pid=1)
    p = explicit.next_publish()
    assert (p.topic, p.payload) == (name + "/x", b"dollar")
    got = _collect(wild, 0.7)
    assert not any(t.startswith("$") for t in got), got
    # '#' still matches ordinary topics.
    pub.publish_qos1("plain/x", b"plain", pid=2)
    assert wild.next_publish().topic == "plain/x"


def test_explicit_sys_wildcard_below_prefix_matches(broker, raw_factory):
    # 4.7.2: "$SYS/#" receives $SYS messages (the wildcard is not the first character).
    c = raw_factory(broker)
    c.connect_ok("sys-hash")
    c.subscribe([("$SYS/#", 0)])
    topics = set(_collect(c, 2.2))
    assert any(t.startswith("$SYS/broker/") for t in topics), topics
