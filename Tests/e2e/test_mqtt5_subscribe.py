"""MQTT 5.0 SUBSCRIBE / UNSUBSCRIBE: subscription options (3.8.3.1), subscription identifiers (3.8.2.1.2, 3.3.4),
shared subscriptions (4.8.2), SUBACK and UNSUBACK reason codes (3.9.3, 3.11.3)."""

import time

import mqtt5_raw as m5
from mqtt5_client import cid
from conftest import unique

opts = m5.subscription_options


def _client(broker, raw5_factory, prefix="c", **kw):
    c = raw5_factory(broker)
    c.connect_ok(cid(prefix), **kw)
    return c


# --------------------------------------------------------------------------- subscription options

def test_no_local(broker, raw5_factory):
    # [MQTT-3.8.3-3]: with No Local the Server MUST NOT forward a client's own messages to it; others' still come.
    topic = unique("nolocal")
    me = _client(broker, raw5_factory, "me")
    assert me.subscribe([(topic, opts(1, no_local=True))]) == [1]
    other = _client(broker, raw5_factory, "other")
    assert other.subscribe([(topic, 1)]) == [1]
    me.publish(topic, b"mine", 1)
    assert other.next_publish().payload == b"mine"
    other.publish(topic, b"theirs", 1)
    assert me.next_publish().payload == b"theirs"
    assert other.next_publish().payload == b"theirs"  # other did not ask for No Local
    me.expect_nothing(0.5)


def test_retain_as_published(broker, raw5_factory):
    # 3.8.3.1: Retain As Published 1 keeps the RETAIN flag of a live message; 0 clears it [MQTT-3.3.1-12, -13].
    topic = unique("rap")
    keep = _client(broker, raw5_factory, "keep")
    keep.subscribe([(topic, opts(1, retain_as_published=True))])
    clear = _client(broker, raw5_factory, "clear")
    clear.subscribe([(topic, opts(1))])
    pub = _client(broker, raw5_factory, "pub")
    pub.publish(topic, b"plain", 1)
    pub.publish(topic, b"retained", 1, retain=True)
    assert [(p.payload, p.retain) for p in keep.publishes(2)] == [(b"plain", False), (b"retained", True)]
    assert [(p.payload, p.retain) for p in clear.publishes(2)] == [(b"plain", False), (b"retained", False)]
    pub.publish(topic, b"", 0, retain=True)  # clear the retained message


def _retained(broker, raw5_factory, base):
    pub = _client(broker, raw5_factory, "pub")
    for i, qos in enumerate((0, 1, 2)):
        pub.publish(f"{base}/{i}", b"r%d" % i, qos, retain=True)
    return pub


def test_retain_handling_0_sends_at_every_subscribe(broker, raw5_factory):
    base = unique("rh0")
    _retained(broker, raw5_factory, base)
    c = _client(broker, raw5_factory)
    c.subscribe([(base + "/+", opts(2, retain_handling=0))])
    first = c.publishes(3)
    assert sorted(p.payload for p in first) == [b"r0", b"r1", b"r2"] and all(p.retain for p in first)
    c.subscribe([(base + "/+", opts(2, retain_handling=0))])  # the same subscription again: sent again
    assert sorted(p.payload for p in c.publishes(3)) == [b"r0", b"r1", b"r2"]
    c.expect_nothing(0.3)


def test_retain_handling_1_sends_only_for_a_new_subscription(broker, raw5_factory):
    base = unique("rh1")
    _retained(broker, raw5_factory, base)
    c = _client(broker, raw5_factory)
    c.subscribe([(base + "/+", opts(2, retain_handling=1))])
    assert sorted(p.payload for p in c.publishes(3)) == [b"r0", b"r1", b"r2"]
    c.subscribe([(base + "/+", opts(2, retain_handling=1))])  # exists already: nothing [MQTT-3.3.1-10]
    c.expect_nothing(0.7)


def test_retain_handling_2_never_sends(broker, raw5_factory):
    base = unique("rh2")
    pub = _retained(broker, raw5_factory, base)
    c = _client(broker, raw5_factory)
    c.subscribe([(base + "/+", opts(2, retain_handling=2))])  # [MQTT-3.3.1-11]
    c.expect_nothing(0.7)
    pub.publish(base + "/0", b"live", 1)
    got = c.next_publish()
    assert (got.payload, got.retain) == (b"live", False)


def test_retain_handling_3_is_malformed(broker, raw5_factory):
    # 3.8.3.1: Retain Handling 3 is a Protocol Error [MQTT-3.8.3-...]; mosquitto answers DISCONNECT 0x81, and 0x82
    # would be as right.
    c = _client(broker, raw5_factory)
    c.send(m5.subscribe(1, [(unique("rh3"), 0x30 | 1)]))
    d = c.disconnect_within(3)
    assert d is not None and d.reason in (m5.MALFORMED_PACKET, m5.PROTOCOL_ERROR), d


# --------------------------------------------------------------------------- subscription identifiers

def test_subscription_identifier_on_delivery(broker, raw5_factory):
    # [MQTT-3.3.4-3]: the Subscription Identifier of the matching subscription is sent with the message; a
    # subscription without one gets none. Identifiers use the full varint range (268,435,455).
    base = unique("sid")
    c = _client(broker, raw5_factory)
    c.subscribe([(base + "/a", 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 268_435_455})
    c.subscribe([(base + "/b", 1)])
    pub = _client(broker, raw5_factory, "pub")
    pub.publish(base + "/a", b"a", 1)
    pub.publish(base + "/b", b"b", 1)
    a, b = c.publishes(2)
    assert a.props.all(m5.SUBSCRIPTION_IDENTIFIER) == [268_435_455], a
    assert b.props.all(m5.SUBSCRIPTION_IDENTIFIER) == [], b


def test_several_subscription_identifiers_when_several_subscriptions_match(broker, raw5_factory):
    # [MQTT-3.3.4-4, -5]: one copy carries the identifiers of every matching subscription; if the Server sends one
    # copy per subscription, each carries its own. Either way every identifier arrives exactly once.
    base = unique("sids")
    c = _client(broker, raw5_factory)
    c.subscribe([(base + "/+", 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 5})
    c.subscribe([(base + "/#", 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 900})
    c.subscribe([(base + "/x", 1)])
    pub = _client(broker, raw5_factory, "pub")
    pub.publish(base + "/x", b"x", 1)
    copies = [c.next_publish()]
    copies += [p for p in c.drain(0.7) if p.ptype == m5.PUBLISH]
    for p in copies:
        c.ack(p)
    ids = sorted(i for p in copies for i in p.props.all(m5.SUBSCRIPTION_IDENTIFIER))
    assert ids == [5, 900], copies
    if len(copies) > 1:
        assert all(len(p.props.all(m5.SUBSCRIPTION_IDENTIFIER)) <= 1 for p in copies), copies


def test_subscription_identifier_replaced_by_resubscribe(broker, raw5_factory):
    # 3.8.4: a SUBSCRIBE to an existing filter replaces the subscription, its identifier included.
    topic = unique("sidr")
    c = _client(broker, raw5_factory)
    c.subscribe([(topic, 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 1})
    c.subscribe([(topic, 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 2})
    _client(broker, raw5_factory, "pub").publish(topic, b"x", 1)
    got = c.next_publish()
    assert got.props.all(m5.SUBSCRIPTION_IDENTIFIER) == [2], got
    c.expect_nothing(0.3)


def test_subscription_identifier_zero_is_an_error(broker, raw5_factory):
    # 3.8.2.1.2: a Subscription Identifier of 0 is a Protocol Error. mosquitto answers DISCONNECT 0x81.
    c = _client(broker, raw5_factory)
    c.send(m5.subscribe(1, [(unique("sid0"), 1)], props={m5.SUBSCRIPTION_IDENTIFIER: 0}))
    d = c.disconnect_within(3)
    assert d is not None and d.reason in (m5.MALFORMED_PACKET, m5.PROTOCOL_ERROR), d


# --------------------------------------------------------------------------- shared subscriptions (4.8.2)

def test_shared_subscription_delivers_each_message_to_one_member(broker, raw5_factory):
    topic = unique("share")
    group = "$share/g%s/%s" % (cid("x")[-4:], topic)
    members = [_client(broker, raw5_factory, f"m{i}") for i in range(2)]
    for m in members:
        assert m.subscribe([(group, 1)]) == [1]
    plain = _client(broker, raw5_factory, "plain")
    plain.subscribe([(topic, 1)])
    pub = _client(broker, raw5_factory, "pub")
    n = 10
    for i in range(n):
        pub.publish(topic, b"%d" % i, 1)
    assert sorted(int(p.payload) for p in plain.publishes(n)) == list(range(n))
    got = []
    for m in members:
        mine = [p for p in m.drain(0.7) if p.ptype == m5.PUBLISH]
        for p in mine:
            m.ack(p)
        got += mine
    payloads = sorted(int(p.payload) for p in got)
    assert payloads == list(range(n)), f"each message to exactly one member: {payloads}"
    assert all(p.topic == topic and p.qos == 1 for p in got)


def test_shared_subscription_qos_is_honoured(broker, raw5_factory):
    # Each member gets at most the QoS it subscribed with (4.8.2: the member's granted QoS applies).
    topic = unique("shareq")
    group = "$share/q%s/%s" % (cid("x")[-4:], topic)
    m0 = _client(broker, raw5_factory, "q0")
    assert m0.subscribe([(group, 0)]) == [0]
    pub = _client(broker, raw5_factory, "pub")
    pub.publish(topic, b"a", 2)
    got = m0.next_publish()
    assert (got.payload, got.qos) == (b"a", 0)
    m0.send(m5.unsubscribe(9, [group]))
    assert m0.expect(m5.UNSUBACK).reasons == [m5.SUCCESS]
    m2 = _client(broker, raw5_factory, "q2")
    assert m2.subscribe([(group, 2)]) == [2]
    pub.publish(topic, b"b", 2)
    got = m2.next_publish()
    assert (got.payload, got.qos) == (b"b", 2)


def test_no_local_on_shared_subscription_is_a_protocol_error(broker, raw5_factory, departure):
    departure("mosquitto", "MQTT 5.0 §3.8.3.1 (MQTT-3.8.3-4): it is a Protocol Error to set No Local on a shared "
              "subscription; mosquitto 2.0.11 grants it")
    c = _client(broker, raw5_factory)
    c.send(m5.subscribe(1, [("$share/g/" + unique("nl"), opts(1, no_local=True))]))
    d = c.disconnect_within(3)
    assert d is not None and d.reason == m5.PROTOCOL_ERROR, d


# --------------------------------------------------------------------------- SUBACK / UNSUBACK reason codes

def test_suback_reason_code_per_filter(broker, raw5_factory):
    # 3.9.3: one reason code per filter, in order; a granted QoS is the requested one when the broker supports it.
    c = _client(broker, raw5_factory)
    base = unique("suback")
    assert c.subscribe([(base + "/0", 0), (base + "/1", 1), (base + "/2", 2), (base + "/#", opts(1, no_local=True))]) \
        == [0, 1, 2, 1]


def test_suback_not_authorized_by_acl(auth5_broker, raw5_factory, broker_kind):
    # 3.9.3: a subscription the ACL forbids MAY be refused with 0x87 (Not authorized). Ours refuses it; mosquitto
    # 2.0.11 grants every SUBSCRIBE and filters at delivery (as with 3.1.1, test_auth.py). Both: nothing is
    # delivered from it.
    b = auth5_broker(acl="topic readwrite open/#\ntopic write secret/#\n", allow_anonymous="true")
    c = _client(b, raw5_factory)
    codes = c.subscribe([("open/x", 1), ("secret/x", 1)])
    assert codes == ([1, m5.NOT_AUTHORIZED] if broker_kind == "mqttchat" else [1, 1])
    pub = _client(b, raw5_factory, "pub")
    pub.publish("secret/x", b"hidden", 1)
    pub.publish("open/x", b"visible", 1)
    got = c.next_publish()
    assert (got.topic, got.payload) == ("open/x", b"visible")
    c.expect_nothing(0.5)


def test_unsuback_reason_codes(broker, raw5_factory):
    # 3.11.3: 0x00 for a subscription that existed, 0x11 (No subscription existed) for one that did not.
    c = _client(broker, raw5_factory)
    topic = unique("unsub")
    c.subscribe([(topic, 1)])
    assert c.unsubscribe([topic, topic + "/never"]) == [m5.SUCCESS, m5.NO_SUBSCRIPTION_EXISTED]
    assert c.unsubscribe([topic]) == [m5.NO_SUBSCRIPTION_EXISTED]
    _client(broker, raw5_factory, "pub").publish(topic, b"x", 1)
    c.expect_nothing(0.5)


def test_invalid_topic_filter_ends_the_connection(broker, raw5_factory):
    # 4.7.1: "a/#/b" is not a valid Topic Filter: the SUBSCRIBE is malformed. mosquitto sends DISCONNECT 0x81; a
    # DISCONNECT with the more specific 0x8F (Topic Filter invalid, allowed in DISCONNECT by table 3-10), or a SUBACK
    # with 0x8F for that filter, are the other lawful answers.
    c = _client(broker, raw5_factory)
    c.send(m5.subscribe(4, [(unique("ok"), 1), ("a/#/b", 1)]))
    p = c.recv()
    if p.ptype == m5.SUBACK:
        assert p.reasons[1] == m5.TOPIC_FILTER_INVALID, p
    else:
        assert p.ptype == m5.DISCONNECT and p.reason in (m5.MALFORMED_PACKET, m5.TOPIC_FILTER_INVALID), p
        assert c.closed_within(3)
