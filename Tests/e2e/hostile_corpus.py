"""A table of malformed and hostile inputs for an MQTT 3.1.1 broker, with what the spec requires of each.

Every case is sent on its own TCP connection (after a valid CONNECT unless `connect_first` is False).
`expect` says what the broker must do:

- CLOSE: close the connection (EOF or reset) within a bounded time, after sending exactly the packets
  listed in `replies` (usually none). MQTT 3.1.1 section 4.8: "Unless stated otherwise, if either the
  Server or Client encounters a protocol violation, it MUST close the Network Connection", and
  MQTT-1.5.3-1/-2, MQTT-2.2.2-2, MQTT-3.1.2-3 ... say so explicitly for their cases.
- ANSWER_OR_CLOSE: valid but abusive input (floods, huge but legal packets): the broker either answers
  every packet correctly (checked by `answer`) or closes the connection; it never answers wrongly.

`mosquitto_departure` holds the reason (with the spec section) where mosquitto 2.0.11 keeps a connection
open that the spec says must be closed; the test marks those as strict xfails on mosquitto only.

The test (test_hostile_corpus.py) also checks, for every case, that a bystander client keeps publishing
and receiving and that the broker process stays alive.
"""

from __future__ import annotations

import random
import struct
import time
from dataclasses import dataclass, field
from typing import Callable

import mqtt_raw as raw
from mqtt_raw import CONNACK, CONNECT, PINGRESP, PUBACK, PUBLISH, PUBREC, SUBACK, SUBSCRIBE, UNSUBACK, UNSUBSCRIBE

CLOSE = "close"
ANSWER_OR_CLOSE = "answer_or_close"

# How long a well-behaved broker may take to close a connection after a protocol violation.
CLOSE_WITHIN = 2.0
# How long a flood's answers may take in total.
FLOOD_ANSWER_WITHIN = 10.0


@dataclass(frozen=True)
class HostileCase:
    """One hostile input and what the spec requires the broker to do with it."""

    name: str
    spec: str
    # The bytes to send, or a function making them (floods, random garbage).
    data: bytes | Callable[[], bytes]
    expect: str = CLOSE
    # Send a valid CONNECT (and read its CONNACK) before `data`.
    connect_first: bool = True
    # After sending, shut down our writing side (the client vanishes mid-packet).
    half_close: bool = False
    # CLOSE: (packet type, body or None for "any body") of each packet expected before the close.
    replies: tuple[tuple[int, bytes | None], ...] = ()
    # ANSWER_OR_CLOSE: reads and checks the answers on the connection; may raise mqtt_raw.Closed.
    answer: Callable[[raw.RawClient], None] | None = None
    mosquitto_departure: str | None = None

    def payload(self) -> bytes:
        return self.data() if callable(self.data) else self.data


# --------------------------------------------------------------------------- builders

def u16(value: int) -> bytes:
    return struct.pack("!H", value)


def connect_body(flags: int, payload: bytes, name: bytes | str = "MQTT", level: int = 4,
                 keepalive: int = 30) -> bytes:
    return raw.utf8(name) + bytes([level, flags]) + u16(keepalive) + payload


def connect_packet(flags: int, payload: bytes, **kw) -> bytes:
    return raw.packet(CONNECT, 0, connect_body(flags, payload, **kw))


def cid(name: str) -> bytes:
    """A client identifier field unique to one case."""
    return raw.utf8(f"hostile-{name}"[:23])


def subscribe_raw(filter_bytes: bytes, options: int = 0, pid: int = 1) -> bytes:
    return raw.packet(SUBSCRIBE, 0x02, u16(pid) + raw.utf8(filter_bytes) + bytes([options]))


def unsubscribe_raw(filter_bytes: bytes, pid: int = 1) -> bytes:
    return raw.packet(UNSUBSCRIBE, 0x02, u16(pid) + raw.utf8(filter_bytes))


def tls_client_hello() -> bytes:
    """A TLS 1.2 ClientHello record, as `openssl s_client` would open a connection with."""
    random_bytes = bytes(range(32))
    ciphers = u16(4) + bytes([0xC0, 0x2F, 0x00, 0x9C])
    sni_name = b"localhost"
    sni = u16(0) + u16(len(sni_name) + 5) + u16(len(sni_name) + 3) + b"\x00" + u16(len(sni_name)) + sni_name
    extensions = u16(len(sni)) + sni
    hello = b"\x03\x03" + random_bytes + b"\x00" + ciphers + b"\x01\x00" + extensions
    handshake = b"\x01" + len(hello).to_bytes(3, "big") + hello
    return b"\x16\x03\x01" + u16(len(handshake)) + handshake


def random_garbage() -> bytes:
    """Deterministic noise that starts with a byte that is no packet type a client may send first."""
    rng = random.Random(20261122)
    return b"\xF7" + bytes(rng.randrange(256) for _ in range(4095))


# --------------------------------------------------------------------------- answer checkers (floods)

def expect_answers(client: raw.RawClient, expected: list[tuple[int, bytes]]) -> None:
    """Reads len(expected) packets and checks type and body of each, in order; raises Closed if the
    broker closes instead."""
    deadline = time.monotonic() + FLOOD_ANSWER_WITHIN
    for index, (ptype, body) in enumerate(expected):
        pkt = client.recv(max(0.01, deadline - time.monotonic()))
        assert (pkt.ptype, pkt.body) == (ptype, body), (
            f"answer {index}: expected {raw.PACKET_NAMES[ptype]} {body.hex()}, got {pkt!r}")


def expect_suback_granted_or_refused(client: raw.RawClient, pid: int, qos: int) -> None:
    """One SUBACK for `pid` granting `qos` or refusing with 0x80 (both legal, 3.9.3)."""
    pkt = client.recv(FLOOD_ANSWER_WITHIN)
    assert pkt.ptype == SUBACK and pkt.body in (u16(pid) + bytes([qos]), u16(pid) + b"\x80"), f"got {pkt!r}"


def subscribe_flood(count: int) -> Callable[[], bytes]:
    return lambda: b"".join(raw.subscribe(pid, [(f"hostile/flood/{pid}", pid % 3)]) for pid in range(1, count + 1))


def subscribe_flood_answers(count: int) -> Callable[[raw.RawClient], None]:
    return lambda c: expect_answers(c, [(SUBACK, u16(pid) + bytes([pid % 3])) for pid in range(1, count + 1)])


def unsubscribe_flood(count: int) -> Callable[[], bytes]:
    return lambda: b"".join(raw.unsubscribe(pid, [f"hostile/flood/{pid}"]) for pid in range(1, count + 1))


def unsubscribe_flood_answers(count: int) -> Callable[[raw.RawClient], None]:
    return lambda c: expect_answers(c, [(UNSUBACK, u16(pid)) for pid in range(1, count + 1)])


def ping_flood(count: int) -> Callable[[], bytes]:
    return lambda: raw.PINGREQ_BYTES * count


def ping_flood_answers(count: int) -> Callable[[raw.RawClient], None]:
    return lambda c: expect_answers(c, [(PINGRESP, b"")] * count)


def publish_qos1_flood(count: int) -> Callable[[], bytes]:
    return lambda: b"".join(raw.publish("hostile/flood/pub", b"p" * 16, 1, pid) for pid in range(1, count + 1))


def publish_qos1_flood_answers(count: int) -> Callable[[raw.RawClient], None]:
    return lambda c: expect_answers(c, [(PUBACK, u16(pid)) for pid in range(1, count + 1)])


def publish_qos2_flood(count: int) -> Callable[[], bytes]:
    return lambda: b"".join(raw.publish("hostile/flood/pub2", b"q", 2, pid) for pid in range(1, count + 1))


def publish_qos2_flood_answers(count: int) -> Callable[[raw.RawClient], None]:
    return lambda c: expect_answers(c, [(PUBREC, u16(pid)) for pid in range(1, count + 1)])


def deep_topic_publish() -> bytes:
    # 32,000 levels: a legal topic name of 63,999 bytes.
    return raw.publish("/".join(["a"] * 32000), b"deep", 1, 7)


def deep_filter_subscribe() -> bytes:
    # 20,000 single-level wildcards ending in '#': a legal filter of 40,001 bytes.
    return raw.subscribe(9, [("+/" * 20000 + "#", 1)])


def many_filters_subscribe() -> bytes:
    return raw.subscribe(11, [(f"hostile/many/{i}", 0) for i in range(2000)])


def large_payload_publish() -> bytes:
    return raw.publish("hostile/large", b"L" * (256 * 1024), 1, 5)


# --------------------------------------------------------------------------- the table

_DEP_FLAGS = ("mosquitto 2.0.11 ignores the reserved flag bits of {} and keeps the connection; "
              "MQTT-2.2.2-2 (section 2.2.2): if invalid flags are received the receiver MUST close "
              "the Network Connection")

_DEP_DIRECTION = ("mosquitto 2.0.11 silently accepts a {} from a client (its bridge code path) and keeps the "
                  "connection; table 2.1 makes it a server-to-client packet, and a protocol violation MUST "
                  "close the connection (4.8)")

CASES: list[HostileCase] = [
    # ---- fixed header: remaining length
    HostileCase("remaining_length_5_bytes",
                "2.2.3: the remaining length is at most 4 bytes; a malformed packet is a protocol violation: "
                "close (4.8)",
                bytes([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])),
    HostileCase("remaining_length_larger_than_sent_then_eof",
                "the client vanishes inside a packet (declared 1000 bytes, sent 10): the server closes "
                "the connection (3.14: a network close without DISCONNECT)",
                bytes([0x30]) + raw.remaining_length(1000) + raw.utf8("t") + b"abcdefg", half_close=True),
    HostileCase("huge_remaining_length_then_eof",
                "a 268,435,455-byte PUBLISH announced, a few bytes sent, then EOF: close without buffering "
                "(3.14)",
                bytes([0x30, 0xFF, 0xFF, 0xFF, 0x7F]) + raw.utf8("t") + b"abc", half_close=True),
    HostileCase("connect_remaining_length_shorter_than_fields",
                "the CONNECT body ends inside the keep alive field: malformed, close without CONNACK (4.8)",
                raw.packet(CONNECT, 0, raw.utf8("MQTT") + bytes([4, 0x02, 0x00])), connect_first=False),
    HostileCase("publish_qos1_shorter_than_packet_id",
                "a QoS 1 PUBLISH whose remaining length ends before the packet identifier (3.3.2.2): "
                "malformed, close (4.8)",
                raw.packet(PUBLISH, 0x02, raw.utf8("t") + b"\x00")),
    HostileCase("subscribe_missing_qos_byte",
                "a SUBSCRIBE filter without its requested QoS byte (3.8.3): malformed, close (4.8)",
                raw.packet(SUBSCRIBE, 0x02, u16(1) + raw.utf8("a/b"))),
    HostileCase("puback_remaining_length_3",
                "PUBACK has remaining length 2 (3.4.1): malformed, close (4.8)",
                bytes([0x40, 0x03, 0x00, 0x01, 0x00]),
                mosquitto_departure="mosquitto 2.0.11 reads the packet identifier of a PUBACK with remaining "
                                    "length 3 and ignores the extra byte; section 3.4.1 fixes the remaining "
                                    "length at 2 and a malformed packet MUST close the connection (4.8)"),
    HostileCase("disconnect_remaining_length_1",
                "DISCONNECT has remaining length 0 (3.14.1): malformed, close (4.8)",
                bytes([0xE0, 0x01, 0x00])),
    HostileCase("pingreq_remaining_length_1",
                "PINGREQ has no variable header or payload (3.12): malformed, close (4.8)",
                bytes([0xC0, 0x01, 0x00]),
                mosquitto_departure="mosquitto 2.0.11 answers a PINGREQ with remaining length 1 with "
                                    "PINGRESP; section 3.12 gives PINGREQ no body and a malformed packet "
                                    "is a protocol violation that MUST close the connection (4.8)"),

    # ---- truncated packets of every type (remaining length consistent, fields cut short)
    HostileCase("truncated_connect_after_protocol_name",
                "CONNECT ends after the protocol name (3.1.2): malformed, close without CONNACK (4.8)",
                raw.packet(CONNECT, 0, raw.utf8("MQTT")), connect_first=False),
    HostileCase("truncated_connect_missing_client_id",
                "CONNECT without its payload (MQTT-3.1.3-3: the client identifier MUST be present): close",
                raw.packet(CONNECT, 0, connect_body(0x02, b"")), connect_first=False),
    HostileCase("truncated_connect_missing_username",
                "user name flag set but no user name field (MQTT-3.1.2-19): close",
                connect_packet(0x82, cid("no-user")), connect_first=False),
    HostileCase("truncated_connack_from_client",
                "a CONNACK (server-to-client) of remaining length 1 sent by a client: malformed and a "
                "protocol violation, close (4.8)",
                bytes([0x20, 0x01, 0x00])),
    HostileCase("truncated_publish_topic_length",
                "PUBLISH body of one byte, inside the topic length (3.3.2.1): close (4.8)",
                bytes([0x30, 0x01, 0x00])),
    HostileCase("truncated_puback", "PUBACK of remaining length 1 (3.4.1): close (4.8)", bytes([0x40, 0x01, 0x00])),
    HostileCase("truncated_pubrec", "PUBREC of remaining length 1 (3.5.1): close (4.8)", bytes([0x50, 0x01, 0x00])),
    HostileCase("truncated_pubrel", "PUBREL of remaining length 1 (3.6.1): close (4.8)", bytes([0x62, 0x01, 0x00])),
    HostileCase("truncated_pubcomp", "PUBCOMP of remaining length 1 (3.7.1): close (4.8)",
                bytes([0x70, 0x01, 0x00])),
    HostileCase("truncated_subscribe_packet_id",
                "SUBSCRIBE of remaining length 1, inside the packet identifier (3.8.2): close (4.8)",
                bytes([0x82, 0x01, 0x00])),
    HostileCase("truncated_suback_from_client",
                "a SUBACK (server-to-client) of remaining length 1 sent by a client: close (4.8)",
                bytes([0x90, 0x01, 0x00])),
    HostileCase("truncated_unsubscribe_filter",
                "UNSUBSCRIBE whose filter length announces 10 bytes but 2 follow (3.10.3): close (4.8)",
                raw.packet(UNSUBSCRIBE, 0x02, u16(1) + u16(10) + b"ab")),
    HostileCase("truncated_unsuback_from_client",
                "an UNSUBACK (server-to-client) of remaining length 1 sent by a client: close (4.8)",
                bytes([0xB0, 0x01, 0x00])),
    HostileCase("oversized_topic_prefix",
                "a topic length prefix of 65535 in a 7-byte PUBLISH (1.5.3, 3.3.2.1): malformed, close (4.8)",
                raw.packet(PUBLISH, 0x00, u16(65535) + b"short")),
    HostileCase("oversized_client_id_prefix",
                "a client identifier length prefix of 65535 with 5 bytes following (1.5.3): malformed, "
                "close without CONNACK (4.8)",
                raw.packet(CONNECT, 0, connect_body(0x02, u16(65535) + b"short")), connect_first=False),

    # ---- UTF-8 (MQTT-1.5.3-1: ill-formed UTF-8 -> MUST close; MQTT-1.5.3-2: U+0000 -> MUST close)
    HostileCase("topic_utf8_0xff", "MQTT-1.5.3-1: 0xFF is never UTF-8: close", raw.publish(b"bad/\xff", b"x")),
    HostileCase("topic_utf8_overlong", "MQTT-1.5.3-1: overlong encoding C0 AF of '/': close",
                raw.publish(b"bad/\xc0\xaf", b"x")),
    HostileCase("topic_utf8_surrogate", "MQTT-1.5.3-1: U+D800 encoded as ED A0 80 (a surrogate): close",
                raw.publish(b"bad/\xed\xa0\x80", b"x")),
    HostileCase("topic_utf8_truncated_sequence", "MQTT-1.5.3-1: a 3-byte sequence cut after 2 bytes: close",
                raw.publish(b"bad/\xe2\x82", b"x")),
    HostileCase("topic_nul", "MQTT-1.5.3-2: U+0000 in a topic name: close", raw.publish(b"bad/\x00", b"x")),
    HostileCase("client_id_utf8_0xff", "MQTT-1.5.3-1 in the client identifier: close without CONNACK",
                connect_packet(0x02, raw.utf8(b"id\xff")), connect_first=False),
    HostileCase("client_id_utf8_surrogate", "MQTT-1.5.3-1: a surrogate in the client identifier: close",
                connect_packet(0x02, raw.utf8(b"id\xed\xbf\xbf")), connect_first=False),
    HostileCase("client_id_nul", "MQTT-1.5.3-2: U+0000 in the client identifier: close",
                connect_packet(0x02, raw.utf8(b"id\x00x")), connect_first=False),
    HostileCase("username_utf8_overlong",
                "MQTT-1.5.3-1 / MQTT-3.1.3-11 (the user name MUST be a UTF-8 encoded string): close",
                connect_packet(0x82, cid("user-overlong") + raw.utf8(b"u\xe0\x80\xaf")), connect_first=False),
    HostileCase("username_nul", "MQTT-1.5.3-2: U+0000 in the user name: close",
                connect_packet(0x82, cid("user-nul") + raw.utf8(b"u\x00")), connect_first=False),
    HostileCase("will_topic_utf8_0xff", "MQTT-1.5.3-1 / MQTT-3.1.3-10 in the will topic: close",
                connect_packet(0x06, cid("will-ff") + raw.utf8(b"w\xff") + raw.utf8(b"m")), connect_first=False),
    HostileCase("subscribe_filter_utf8_surrogate", "MQTT-1.5.3-1 in a SUBSCRIBE filter: close",
                subscribe_raw(b"a/\xed\xb0\x80")),
    HostileCase("subscribe_filter_nul", "MQTT-1.5.3-2 in a SUBSCRIBE filter: close", subscribe_raw(b"a/\x00")),
    HostileCase("unsubscribe_filter_utf8_0xff", "MQTT-1.5.3-1 in an UNSUBSCRIBE filter: close",
                unsubscribe_raw(b"a/\xff")),

    # ---- topic names and filters
    HostileCase("publish_wildcard_plus", "MQTT-3.3.2-2: a topic name MUST NOT contain wildcards: close",
                raw.publish("bad/+/x", b"x")),
    HostileCase("publish_wildcard_hash", "MQTT-3.3.2-2: '#' in a PUBLISH topic name: close",
                raw.publish("bad/#", b"x")),
    HostileCase("publish_empty_topic", "MQTT-4.7.3-1: a topic name is at least one character long: close",
                raw.publish("", b"x")),
    HostileCase("will_topic_wildcard",
                "MQTT-4.7.1-1: wildcards MUST NOT be used within a topic name, and the will topic is one "
                "(3.1.3.2): close without accepting the connection",
                connect_packet(0x06, cid("will-wild") + raw.utf8("will/+") + raw.utf8(b"m")), connect_first=False),
    HostileCase("will_topic_empty", "MQTT-4.7.3-1: an empty will topic: close without accepting",
                connect_packet(0x06, cid("will-empty") + raw.utf8("") + raw.utf8(b"m")), connect_first=False),
    HostileCase("subscribe_filter_hash_not_last", "MQTT-4.7.1-2: '#' MUST be the last level: close",
                raw.subscribe(1, [("a/#/b", 0)])),
    HostileCase("subscribe_filter_plus_not_whole_level",
                "MQTT-4.7.1-3: '+' MUST occupy an entire level: close", raw.subscribe(1, [("a+", 0)])),
    HostileCase("subscribe_filter_hash_not_whole_level",
                "MQTT-4.7.1-2: '#' MUST occupy an entire level: close", raw.subscribe(1, [("a/b#", 0)])),
    HostileCase("subscribe_filter_empty", "MQTT-4.7.3-1: a topic filter is at least one character long: close",
                raw.subscribe(1, [("", 0)])),
    HostileCase("unsubscribe_filter_invalid", "MQTT-4.7.1-2 in an UNSUBSCRIBE filter 'a/#/b': close",
                raw.unsubscribe(1, ["a/#/b"])),

    # ---- packet identifiers (MQTT-2.3.1-1: non-zero)
    HostileCase("publish_qos1_packet_id_0", "MQTT-2.3.1-1: a QoS 1 PUBLISH needs a non-zero identifier: close",
                raw.publish("hostile/pid0", b"x", 1, 0)),
    HostileCase("publish_qos2_packet_id_0", "MQTT-2.3.1-1: a QoS 2 PUBLISH needs a non-zero identifier: close",
                raw.publish("hostile/pid0", b"x", 2, 0)),
    HostileCase("subscribe_packet_id_0", "MQTT-2.3.1-1: SUBSCRIBE needs a non-zero identifier: close",
                raw.subscribe(0, [("a", 0)])),
    HostileCase("unsubscribe_packet_id_0", "MQTT-2.3.1-1: UNSUBSCRIBE needs a non-zero identifier: close",
                raw.unsubscribe(0, ["a"])),
    HostileCase("puback_packet_id_0",
                "2.3.1: identifiers are non-zero, so a PUBACK for 0 acknowledges nothing that can exist: "
                "a protocol violation, close (4.8)",
                raw.puback(0)),
    HostileCase("pubrel_packet_id_0", "2.3.1: a PUBREL for identifier 0: protocol violation, close (4.8)",
                raw.pubrel(0)),

    # ---- reserved flag bits (MQTT-2.2.2-2: invalid flags -> MUST close)
    HostileCase("flags_connect", "MQTT-2.2.2-2: CONNECT flags 0001 (table 2.2 fixes 0000): close without CONNACK",
                bytes([0x11]) + raw.connect("hostile-flags")[1:], connect_first=False),
    HostileCase("flags_connack", "MQTT-2.2.2-2: a client's CONNACK with flags 0001: close",
                bytes([0x21, 0x02, 0x00, 0x00])),
    HostileCase("flags_puback", "MQTT-2.2.2-2: PUBACK flags 0001: close", bytes([0x41, 0x02, 0x00, 0x01]),
                mosquitto_departure=_DEP_FLAGS.format("PUBACK")),
    HostileCase("flags_pubrec", "MQTT-2.2.2-2: PUBREC flags 0010: close", bytes([0x52, 0x02, 0x00, 0x01]),
                mosquitto_departure=_DEP_FLAGS.format("PUBREC") + " (it even answers with PUBREL)"),
    HostileCase("flags_pubrel", "MQTT-2.2.2-2: PUBREL flags 0000 (table 2.2 fixes 0010): close",
                bytes([0x60, 0x02, 0x00, 0x01])),
    HostileCase("flags_pubcomp", "MQTT-2.2.2-2: PUBCOMP flags 1000: close", bytes([0x78, 0x02, 0x00, 0x01]),
                mosquitto_departure=_DEP_FLAGS.format("PUBCOMP")),
    HostileCase("flags_subscribe", "MQTT-2.2.2-2 / MQTT-3.8.1-1: SUBSCRIBE flags 0000: close",
                raw.packet(SUBSCRIBE, 0x00, u16(1) + raw.utf8("a") + b"\x00")),
    HostileCase("flags_suback", "MQTT-2.2.2-2: a client's SUBACK with flags 0100: close",
                bytes([0x94, 0x03, 0x00, 0x01, 0x00]), mosquitto_departure=_DEP_FLAGS.format("SUBACK")),
    HostileCase("flags_unsubscribe", "MQTT-2.2.2-2 / MQTT-3.10.1-1: UNSUBSCRIBE flags 0011: close",
                raw.packet(UNSUBSCRIBE, 0x03, u16(1) + raw.utf8("a"))),
    HostileCase("flags_unsuback", "MQTT-2.2.2-2: a client's UNSUBACK with flags 0001: close",
                bytes([0xB1, 0x02, 0x00, 0x01]), mosquitto_departure=_DEP_FLAGS.format("UNSUBACK")),
    HostileCase("flags_pingreq", "MQTT-2.2.2-2: PINGREQ flags 0001: close", bytes([0xC1, 0x00]),
                mosquitto_departure=_DEP_FLAGS.format("PINGREQ")),
    HostileCase("flags_pingresp", "MQTT-2.2.2-2: a client's PINGRESP with flags 0001: close", bytes([0xD1, 0x00]),
                mosquitto_departure=_DEP_FLAGS.format("PINGRESP")),
    HostileCase("flags_disconnect", "MQTT-2.2.2-2: DISCONNECT flags 0010: close", bytes([0xE2, 0x00])),
    HostileCase("publish_qos_3", "MQTT-3.3.1-4: a PUBLISH MUST NOT have both QoS bits set: close",
                raw.packet(PUBLISH, 0x06, raw.utf8("hostile/qos3") + u16(1) + b"x")),
    HostileCase("publish_qos0_dup", "MQTT-3.3.1-2: DUP MUST be 0 for QoS 0: a protocol violation, close (4.8)",
                raw.packet(PUBLISH, 0x08, raw.utf8("hostile/dup") + b"x"),
                mosquitto_departure="mosquitto 2.0.11 accepts a QoS 0 PUBLISH with DUP set; MQTT-3.3.1-2 says "
                                    "DUP MUST be 0 for QoS 0, and a protocol violation MUST close the "
                                    "connection (4.8)"),

    # ---- SUBSCRIBE / UNSUBSCRIBE payload rules
    HostileCase("subscribe_qos_3", "MQTT-3-8.3-4: requested QoS 3 is malformed: close",
                subscribe_raw(b"a/b", options=0x03)),
    HostileCase("subscribe_reserved_option_bits",
                "MQTT-3-8.3-4: reserved bits of the requested QoS byte set: close",
                subscribe_raw(b"a/b", options=0x81)),
    HostileCase("subscribe_no_filters", "MQTT-3.8.3-3: SUBSCRIBE without filters is a protocol violation: close",
                raw.packet(SUBSCRIBE, 0x02, u16(1))),
    HostileCase("unsubscribe_no_filters",
                "MQTT-3.10.3-2: UNSUBSCRIBE without filters is a protocol violation: close",
                raw.packet(UNSUBSCRIBE, 0x02, u16(1))),

    # ---- CONNECT rules and packet order
    HostileCase("second_connect", "MQTT-3.1.0-2: a second CONNECT is a protocol violation: disconnect",
                raw.connect("hostile-second")),
    HostileCase("publish_before_connect",
                "MQTT-3.1.0-1: the first packet MUST be CONNECT; anything else is a protocol violation: close",
                raw.publish("hostile/early", b"x"), connect_first=False),
    HostileCase("subscribe_before_connect", "MQTT-3.1.0-1: SUBSCRIBE first: close",
                raw.subscribe(1, [("#", 0)]), connect_first=False),
    HostileCase("pingreq_before_connect", "MQTT-3.1.0-1: PINGREQ first: close",
                raw.PINGREQ_BYTES, connect_first=False),
    HostileCase("connect_reserved_flag",
                "MQTT-3.1.2-3: the server MUST disconnect a client whose reserved CONNECT flag is 1",
                connect_packet(0x03, cid("reserved")), connect_first=False),
    HostileCase("connect_password_without_username",
                "MQTT-3.1.2-22: password flag without user name flag: protocol violation, close (4.8)",
                connect_packet(0x42, cid("pw-no-user") + raw.utf8(b"secret")), connect_first=False),
    HostileCase("connect_will_qos_without_will",
                "MQTT-3.1.2-13: will flag 0 requires will QoS 0: close", connect_packet(0x0A, cid("wq")),
                connect_first=False),
    HostileCase("connect_will_retain_without_will",
                "MQTT-3.1.2-15: will flag 0 requires will retain 0: close", connect_packet(0x22, cid("wr")),
                connect_first=False),
    HostileCase("connect_will_qos_3", "MQTT-3.1.2-14: will QoS MUST NOT be 3: close",
                connect_packet(0x1E, cid("wq3") + raw.utf8("w") + raw.utf8(b"m")), connect_first=False),
    HostileCase("connect_unknown_protocol_name",
                "MQTT-3.1.2-1: a wrong protocol name: the server MAY disconnect (both brokers here do)",
                connect_packet(0x02, cid("proto"), name="MQTX"), connect_first=False),
    HostileCase("connect_unsupported_level",
                "MQTT-3.1.2-2: an unsupported protocol level: CONNACK 0x01 and then disconnect",
                connect_packet(0x02, cid("level"), level=7), connect_first=False,
                replies=((CONNACK, b"\x00\x01"),)),
    HostileCase("connect_empty_id_without_clean_session",
                "MQTT-3.1.3-8: an empty client id with Clean Session 0: CONNACK 0x02, then close",
                connect_packet(0x00, raw.utf8("")), connect_first=False, replies=((CONNACK, b"\x00\x02"),)),

    # ---- server-to-client packets sent by a client (table 2.1 gives their direction)
    HostileCase("suback_from_client",
                "table 2.1: SUBACK flows server to client only; receiving one is a protocol violation: close (4.8)",
                bytes([0x90, 0x03, 0x00, 0x01, 0x00]), mosquitto_departure=_DEP_DIRECTION.format("SUBACK")),
    HostileCase("unsuback_from_client",
                "table 2.1: UNSUBACK flows server to client only: close (4.8)",
                bytes([0xB0, 0x02, 0x00, 0x01]), mosquitto_departure=_DEP_DIRECTION.format("UNSUBACK")),
    HostileCase("pingresp_from_client",
                "table 2.1: PINGRESP flows server to client only: close (4.8)",
                bytes([0xD0, 0x00]), mosquitto_departure=_DEP_DIRECTION.format("PINGRESP")),
    HostileCase("connack_from_client",
                "table 2.1: CONNACK flows server to client only: close (4.8)", bytes([0x20, 0x02, 0x00, 0x00])),

    # ---- packet types and foreign protocols
    HostileCase("packet_type_0", "2.2.1: packet type 0 is reserved: close", bytes([0x00, 0x00])),
    HostileCase("packet_type_15", "2.2.1: packet type 15 is reserved in 3.1.1: close", bytes([0xF0, 0x00])),
    HostileCase("packet_type_15_before_connect", "2.2.1 and MQTT-3.1.0-1: close", bytes([0xF0, 0x00]),
                connect_first=False),
    HostileCase("garbage_bytes", "not MQTT (first byte 0xF7, type 15): close (MQTT-3.1.0-1, 2.2.1)",
                random_garbage, connect_first=False),
    HostileCase("garbage_after_connect", "0xFF bytes after CONNECT: type 15 with flags 1111: close",
                b"\xFF" * 64),
    HostileCase("http_request_line", "an HTTP request is not a CONNECT (MQTT-3.1.0-1): close",
                b"GET /mqtt HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\r\n", connect_first=False),
    HostileCase("tls_client_hello_on_plain_listener",
                "a TLS ClientHello (first byte 0x16: type 1 with flags 0110) is not a CONNECT: close",
                tls_client_hello, connect_first=False),

    # ---- valid but abusive: answer every packet correctly, or close; never hurt others
    HostileCase("flood_1000_subscribes_one_write",
                "1,000 valid SUBSCRIBEs in one write: a SUBACK each, in order (MQTT-3.8.4-1, 4.6), or close",
                subscribe_flood(1000), expect=ANSWER_OR_CLOSE, answer=subscribe_flood_answers(1000)),
    HostileCase("flood_1000_unsubscribes_one_write",
                "1,000 valid UNSUBSCRIBEs in one write: an UNSUBACK each (MQTT-3.10.4-4), or close",
                unsubscribe_flood(1000), expect=ANSWER_OR_CLOSE, answer=unsubscribe_flood_answers(1000)),
    HostileCase("flood_5000_pingreqs", "5,000 PINGREQs in one write: a PINGRESP each (MQTT-3.12.4-1), or close",
                ping_flood(5000), expect=ANSWER_OR_CLOSE, answer=ping_flood_answers(5000)),
    HostileCase("flood_1000_qos1_publishes",
                "1,000 QoS 1 PUBLISHes in one write: a PUBACK each, in order (4.6), or close",
                publish_qos1_flood(1000), expect=ANSWER_OR_CLOSE, answer=publish_qos1_flood_answers(1000)),
    HostileCase("flood_500_qos2_publishes_without_pubrel",
                "500 QoS 2 PUBLISHes never released: a PUBREC each (MQTT-4.3.3-2), or close",
                publish_qos2_flood(500), expect=ANSWER_OR_CLOSE, answer=publish_qos2_flood_answers(500)),
    HostileCase("subscribe_2000_filters_one_packet",
                "one SUBSCRIBE with 2,000 filters: one SUBACK with 2,000 return codes (MQTT-3.8.4-5), or close",
                many_filters_subscribe, expect=ANSWER_OR_CLOSE,
                answer=lambda c: expect_answers(c, [(SUBACK, u16(11) + bytes(2000))])),
    HostileCase("publish_32000_level_topic",
                "a legal 63,999-byte topic name of 32,000 levels: PUBACK (MQTT-3.3.4-1), or close",
                deep_topic_publish, expect=ANSWER_OR_CLOSE,
                answer=lambda c: expect_answers(c, [(PUBACK, u16(7))])),
    HostileCase("subscribe_20000_level_filter",
                "a legal filter of 20,000 '+' levels and '#': SUBACK 0x01 or 0x80 (3.9.3), or close",
                deep_filter_subscribe, expect=ANSWER_OR_CLOSE,
                answer=lambda c: expect_suback_granted_or_refused(c, 9, 1)),
    HostileCase("publish_256k_payload",
                "a 256 KiB QoS 1 PUBLISH (legal up to 256 MB): PUBACK, or close if over the broker's limit",
                large_payload_publish, expect=ANSWER_OR_CLOSE,
                answer=lambda c: expect_answers(c, [(PUBACK, u16(5))])),
]

CASES_BY_NAME = {case.name: case for case in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names"
