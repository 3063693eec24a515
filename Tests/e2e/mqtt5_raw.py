"""Hand-built MQTT 5.0 packets, a parser for what a server sends, and a raw-socket client.

The MQTT 5 counterpart of mqtt_raw.py: exact bytes on the wire, properties of every type (in order, repeated
user properties kept), reason codes, and "did the server send DISCONNECT with reason X, or just close?" checks.

Properties are given as a list of (identifier, value) pairs, in wire order, or as a dict {identifier: value}
(a list value for USER_PROPERTY / SUBSCRIPTION_IDENTIFIER repeats the property). Parsed properties are a
`Props` (ordered pairs with lookups).
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

import mqtt_raw

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT, AUTH = 8, 9, 10, 11, 12, 13, 14, 15

PACKET_NAMES = {
    1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP",
    8: "SUBSCRIBE", 9: "SUBACK", 10: "UNSUBSCRIBE", 11: "UNSUBACK", 12: "PINGREQ", 13: "PINGRESP",
    14: "DISCONNECT", 15: "AUTH",
}

DEFAULT_TIMEOUT = 5.0

# --------------------------------------------------------------------------- properties (section 2.2.2.2)

PAYLOAD_FORMAT_INDICATOR = 0x01
MESSAGE_EXPIRY_INTERVAL = 0x02
CONTENT_TYPE = 0x03
RESPONSE_TOPIC = 0x08
CORRELATION_DATA = 0x09
SUBSCRIPTION_IDENTIFIER = 0x0B
SESSION_EXPIRY_INTERVAL = 0x11
ASSIGNED_CLIENT_IDENTIFIER = 0x12
SERVER_KEEP_ALIVE = 0x13
AUTHENTICATION_METHOD = 0x15
AUTHENTICATION_DATA = 0x16
REQUEST_PROBLEM_INFORMATION = 0x17
WILL_DELAY_INTERVAL = 0x18
REQUEST_RESPONSE_INFORMATION = 0x19
RESPONSE_INFORMATION = 0x1A
SERVER_REFERENCE = 0x1C
REASON_STRING = 0x1F
RECEIVE_MAXIMUM = 0x21
TOPIC_ALIAS_MAXIMUM = 0x22
TOPIC_ALIAS = 0x23
MAXIMUM_QOS = 0x24
RETAIN_AVAILABLE = 0x25
USER_PROPERTY = 0x26
MAXIMUM_PACKET_SIZE = 0x27
WILDCARD_SUBSCRIPTION_AVAILABLE = 0x28
SUBSCRIPTION_IDENTIFIER_AVAILABLE = 0x29
SHARED_SUBSCRIPTION_AVAILABLE = 0x2A

BYTE, TWO, FOUR, VARINT, STRING, BINARY, PAIR = "byte", "two", "four", "varint", "string", "binary", "pair"

PROPERTY_TYPES = {
    PAYLOAD_FORMAT_INDICATOR: BYTE, MESSAGE_EXPIRY_INTERVAL: FOUR, CONTENT_TYPE: STRING,
    RESPONSE_TOPIC: STRING, CORRELATION_DATA: BINARY, SUBSCRIPTION_IDENTIFIER: VARINT,
    SESSION_EXPIRY_INTERVAL: FOUR, ASSIGNED_CLIENT_IDENTIFIER: STRING, SERVER_KEEP_ALIVE: TWO,
    AUTHENTICATION_METHOD: STRING, AUTHENTICATION_DATA: BINARY, REQUEST_PROBLEM_INFORMATION: BYTE,
    WILL_DELAY_INTERVAL: FOUR, REQUEST_RESPONSE_INFORMATION: BYTE, RESPONSE_INFORMATION: STRING,
    SERVER_REFERENCE: STRING, REASON_STRING: STRING, RECEIVE_MAXIMUM: TWO, TOPIC_ALIAS_MAXIMUM: TWO,
    TOPIC_ALIAS: TWO, MAXIMUM_QOS: BYTE, RETAIN_AVAILABLE: BYTE, USER_PROPERTY: PAIR,
    MAXIMUM_PACKET_SIZE: FOUR, WILDCARD_SUBSCRIPTION_AVAILABLE: BYTE,
    SUBSCRIPTION_IDENTIFIER_AVAILABLE: BYTE, SHARED_SUBSCRIPTION_AVAILABLE: BYTE,
}

# --------------------------------------------------------------------------- reason codes (section 2.4)

SUCCESS = 0x00
GRANTED_QOS_1, GRANTED_QOS_2 = 0x01, 0x02
DISCONNECT_WITH_WILL = 0x04
NO_MATCHING_SUBSCRIBERS = 0x10
NO_SUBSCRIPTION_EXISTED = 0x11
UNSPECIFIED_ERROR = 0x80
MALFORMED_PACKET = 0x81
PROTOCOL_ERROR = 0x82
IMPLEMENTATION_SPECIFIC_ERROR = 0x83
UNSUPPORTED_PROTOCOL_VERSION = 0x84
CLIENT_IDENTIFIER_NOT_VALID = 0x85
BAD_USER_NAME_OR_PASSWORD = 0x86
NOT_AUTHORIZED = 0x87
SERVER_BUSY = 0x89
BAD_AUTHENTICATION_METHOD = 0x8C
KEEP_ALIVE_TIMEOUT = 0x8D
SESSION_TAKEN_OVER = 0x8E
TOPIC_FILTER_INVALID = 0x8F
TOPIC_NAME_INVALID = 0x90
PACKET_IDENTIFIER_IN_USE = 0x91
PACKET_IDENTIFIER_NOT_FOUND = 0x92
RECEIVE_MAXIMUM_EXCEEDED = 0x93
TOPIC_ALIAS_INVALID = 0x94
PACKET_TOO_LARGE = 0x95
QUOTA_EXCEEDED = 0x97
PAYLOAD_FORMAT_INVALID = 0x99
RETAIN_NOT_SUPPORTED = 0x9A
QOS_NOT_SUPPORTED = 0x9B
SHARED_SUBSCRIPTIONS_NOT_SUPPORTED = 0x9E
SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED = 0xA1
WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED = 0xA2


# --------------------------------------------------------------------------- primitive encodings (section 1.5)

def varint(n: int) -> bytes:
    """Variable Byte Integer (1.5.5), also the remaining length."""
    if not 0 <= n <= 268_435_455:
        raise ValueError(f"varint out of range: {n}")
    out = bytearray()
    while True:
        byte = n % 128
        n //= 128
        if n:
            byte |= 0x80
        out.append(byte)
        if not n:
            return bytes(out)


def utf8(s: str | bytes) -> bytes:
    """A length-prefixed UTF-8 string (1.5.4); bytes are sent as given (to build bad input)."""
    data = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("!H", len(data)) + data


def binary(b: bytes) -> bytes:
    """Binary Data (1.5.6)."""
    return struct.pack("!H", len(b)) + b


def packet(ptype: int, flags: int, body: bytes) -> bytes:
    return bytes([(ptype << 4) | flags]) + varint(len(body)) + body


def _items(props) -> list[tuple[int, object]]:
    if props is None:
        return []
    if isinstance(props, dict):
        out = []
        for k, v in props.items():
            if k in (USER_PROPERTY, SUBSCRIPTION_IDENTIFIER) and isinstance(v, list):
                out += [(k, x) for x in v]
            else:
                out.append((k, v))
        return out
    return list(props)


def encode_property(pid: int, value) -> bytes:
    kind = PROPERTY_TYPES[pid]
    head = varint(pid)
    if kind == BYTE:
        return head + bytes([value])
    if kind == TWO:
        return head + struct.pack("!H", value)
    if kind == FOUR:
        return head + struct.pack("!I", value)
    if kind == VARINT:
        return head + varint(value)
    if kind == STRING:
        return head + utf8(value)
    if kind == BINARY:
        return head + binary(value)
    k, v = value
    return head + utf8(k) + utf8(v)


def properties(props=None) -> bytes:
    """The property length followed by the properties (2.2.2)."""
    body = b"".join(encode_property(k, v) for k, v in _items(props))
    return varint(len(body)) + body


# --------------------------------------------------------------------------- packets a client sends

def connect(client_id: str | bytes = "", clean_start: bool = True, keepalive: int = 60, props=None, *,
            proto_name: str = "MQTT", level: int = 5,
            will: tuple | None = None, will_props=None,
            username: str | None = None, password: bytes | None = None) -> bytes:
    """CONNECT (3.1). will = (topic, payload, qos, retain)."""
    flags = 0x02 if clean_start else 0
    payload = utf8(client_id)
    if will is not None:
        topic, message, qos, retain = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += properties(will_props) + utf8(topic) + binary(message)
    if username is not None:
        flags |= 0x80
        payload += utf8(username)
    if password is not None:
        flags |= 0x40
        payload += binary(password)
    body = utf8(proto_name) + bytes([level, flags]) + struct.pack("!H", keepalive) + properties(props) + payload
    return packet(CONNECT, 0, body)


def publish(topic: str | bytes, payload: bytes = b"", qos: int = 0, pid: int | None = None,
            retain: bool = False, dup: bool = False, props=None) -> bytes:
    flags = (0x08 if dup else 0) | (qos << 1) | (0x01 if retain else 0)
    body = utf8(topic)
    if qos > 0:
        body += struct.pack("!H", 1 if pid is None else pid)
    return packet(PUBLISH, flags, body + properties(props) + payload)


def subscription_options(qos: int = 0, no_local: bool = False, retain_as_published: bool = False,
                         retain_handling: int = 0) -> int:
    """The Subscription Options byte (3.8.3.1)."""
    return qos | (0x04 if no_local else 0) | (0x08 if retain_as_published else 0) | (retain_handling << 4)


def subscribe(pid: int, filters: list[tuple[str, int]], props=None) -> bytes:
    """SUBSCRIBE; each filter is (topic filter, options byte) -- a plain QoS is a valid options byte."""
    body = struct.pack("!H", pid) + properties(props) + b"".join(utf8(f) + bytes([o]) for f, o in filters)
    return packet(SUBSCRIBE, 0x02, body)


def unsubscribe(pid: int, filters: list[str], props=None) -> bytes:
    body = struct.pack("!H", pid) + properties(props) + b"".join(utf8(f) for f in filters)
    return packet(UNSUBSCRIBE, 0x02, body)


def _ack(ptype: int, flags: int, pid: int, reason: int | None, props) -> bytes:
    body = struct.pack("!H", pid)
    if reason is not None or props:
        body += bytes([reason or 0])
        if props:
            body += properties(props)
    return packet(ptype, flags, body)


def puback(pid: int, reason: int | None = None, props=None) -> bytes:
    return _ack(PUBACK, 0, pid, reason, props)


def pubrec(pid: int, reason: int | None = None, props=None) -> bytes:
    return _ack(PUBREC, 0, pid, reason, props)


def pubrel(pid: int, reason: int | None = None, props=None) -> bytes:
    return _ack(PUBREL, 0x02, pid, reason, props)


def pubcomp(pid: int, reason: int | None = None, props=None) -> bytes:
    return _ack(PUBCOMP, 0, pid, reason, props)


def disconnect(reason: int = 0, props=None) -> bytes:
    if reason == 0 and not props:
        return packet(DISCONNECT, 0, b"")
    return packet(DISCONNECT, 0, bytes([reason]) + properties(props))


def auth(reason: int = 0x18, props=None) -> bytes:
    return packet(AUTH, 0, bytes([reason]) + properties(props))


PINGREQ_BYTES = bytes([0xC0, 0x00])


# --------------------------------------------------------------------------- decoding

class Malformed(Exception):
    pass


class Props(list):
    """Parsed properties: (identifier, value) pairs in wire order."""

    def get(self, pid: int, default=None):
        for k, v in self:
            if k == pid:
                return v
        return default

    def all(self, pid: int) -> list:
        return [v for k, v in self if k == pid]

    def __contains__(self, pid) -> bool:  # `SERVER_KEEP_ALIVE in props`
        return any(k == pid for k, _ in self)

    @property
    def user(self) -> list[tuple[str, str]]:
        return self.all(USER_PROPERTY)


def read_varint(data: bytes, i: int) -> tuple[int, int]:
    mult, value = 1, 0
    for n in range(4):
        if i >= len(data):
            raise Malformed("truncated varint")
        b = data[i]
        i += 1
        value += (b & 0x7F) * mult
        if not b & 0x80:
            return value, i
        mult *= 128
    raise Malformed("varint longer than 4 bytes")


def read_string(data: bytes, i: int) -> tuple[str, int]:
    raw, i = read_binary(data, i)
    return raw.decode("utf-8"), i


def read_binary(data: bytes, i: int) -> tuple[bytes, int]:
    if i + 2 > len(data):
        raise Malformed("truncated length")
    (n,) = struct.unpack("!H", data[i:i + 2])
    if i + 2 + n > len(data):
        raise Malformed("truncated data")
    return data[i + 2:i + 2 + n], i + 2 + n


def read_properties(data: bytes, i: int) -> tuple[Props, int]:
    length, i = read_varint(data, i)
    end = i + length
    if end > len(data):
        raise Malformed("property length beyond packet")
    out = Props()
    while i < end:
        pid, i = read_varint(data, i)
        kind = PROPERTY_TYPES.get(pid)
        if kind is None:
            raise Malformed(f"unknown property {pid:#x}")
        if kind == BYTE:
            value, i = data[i], i + 1
        elif kind == TWO:
            (value,), i = struct.unpack("!H", data[i:i + 2]), i + 2
        elif kind == FOUR:
            (value,), i = struct.unpack("!I", data[i:i + 4]), i + 4
        elif kind == VARINT:
            value, i = read_varint(data, i)
        elif kind == STRING:
            value, i = read_string(data, i)
        elif kind == BINARY:
            value, i = read_binary(data, i)
        else:
            k, i = read_string(data, i)
            v, i = read_string(data, i)
            value = (k, v)
        out.append((pid, value))
    if i != end:
        raise Malformed("property overran its length")
    return out, end


@dataclass
class Packet:
    """A packet from the server, decoded by type: CONNACK (session_present, reason, props), PUBLISH (topic, pid,
    props, payload, qos, dup, retain), PUBACK..PUBCOMP (pid, reason, props), SUBACK/UNSUBACK (pid, props,
    reasons), DISCONNECT/AUTH (reason, props)."""
    ptype: int
    flags: int
    body: bytes
    reason: int | None = None
    reasons: list[int] = field(default_factory=list)
    props: Props = field(default_factory=Props)
    pid: int | None = None
    topic: str | None = None
    payload: bytes = b""
    session_present: bool = False

    @property
    def name(self) -> str:
        return PACKET_NAMES.get(self.ptype, f"type{self.ptype}")

    @property
    def raw(self) -> bytes:
        return packet(self.ptype, self.flags, self.body)

    @property
    def qos(self) -> int:
        return (self.flags >> 1) & 0x03

    @property
    def dup(self) -> bool:
        return bool(self.flags & 0x08)

    @property
    def retain(self) -> bool:
        return bool(self.flags & 0x01)

    def __repr__(self) -> str:
        if self.ptype == PUBLISH:
            return (f"PUBLISH(topic={self.topic!r}, qos={self.qos}, pid={self.pid}, retain={self.retain}, "
                    f"dup={self.dup}, props={list(self.props)}, payload={self.payload[:60]!r})")
        if self.ptype in (SUBACK, UNSUBACK):
            return f"{self.name}(pid={self.pid}, reasons={[hex(r) for r in self.reasons]}, props={list(self.props)})"
        if self.ptype == CONNACK:
            return (f"CONNACK(session_present={self.session_present}, reason={self.reason:#x}, "
                    f"props={list(self.props)})")
        if self.reason is not None:
            pid = f"pid={self.pid}, " if self.pid is not None else ""
            return f"{self.name}({pid}reason={self.reason:#x}, props={list(self.props)})"
        return f"{self.name}(flags={self.flags:#x}, body={self.body.hex()})"


def decode(ptype: int, flags: int, body: bytes) -> Packet:
    p = Packet(ptype, flags, body)
    if ptype == CONNACK:
        if len(body) < 2:
            raise Malformed("short CONNACK")
        p.session_present = bool(body[0] & 0x01)
        p.reason = body[1]
        if len(body) > 2:
            p.props, _ = read_properties(body, 2)
    elif ptype == PUBLISH:
        p.topic, i = read_string(body, 0)
        if p.qos > 0:
            (p.pid,) = struct.unpack("!H", body[i:i + 2])
            i += 2
        p.props, i = read_properties(body, i)
        p.payload = body[i:]
    elif ptype in (PUBACK, PUBREC, PUBREL, PUBCOMP):
        (p.pid,) = struct.unpack("!H", body[:2])
        p.reason = body[2] if len(body) > 2 else 0
        if len(body) > 3:
            p.props, _ = read_properties(body, 3)
    elif ptype in (SUBACK, UNSUBACK):
        (p.pid,) = struct.unpack("!H", body[:2])
        if len(body) > 2:
            p.props, i = read_properties(body, 2)
            p.reasons = list(body[i:])
    elif ptype in (DISCONNECT, AUTH):
        p.reason = body[0] if body else 0
        if len(body) > 1:
            p.props, _ = read_properties(body, 1)
    return p


Closed = mqtt_raw.Closed  # one exception for both raw clients (they share mqtt_raw.PacketSocket)


class Raw5Client(mqtt_raw.PacketSocket):
    """A blocking MQTT 5 client over a plain socket; every read is bounded by a timeout."""

    names = PACKET_NAMES

    def __init__(self, port: int, host: str = "127.0.0.1"):
        super().__init__(port, host)
        self.next_pid = 1
        self.pending: list[Packet] = []  # read while waiting for something else (wait_for)

    def _try_parse(self) -> Packet | None:
        if len(self.buf) < 2:
            return None
        try:
            length, i = read_varint(self.buf, 1)
        except Malformed:
            if len(self.buf) < 5:
                return None
            raise
        if len(self.buf) < i + length:
            return None
        first = self.buf[0]
        body = self.buf[i:i + length]
        self.buf = self.buf[i + length:]
        return decode(first >> 4, first & 0x0F, body)

    def recv(self, timeout: float = DEFAULT_TIMEOUT) -> Packet:
        """The next packet (one kept by `wait_for` first); raises TimeoutError or Closed."""
        if self.pending:
            return self.pending.pop(0)
        return super().recv(timeout)

    def wait_for(self, ptype: int, pid: int | None = None, timeout: float = DEFAULT_TIMEOUT) -> Packet:
        """The next packet of `ptype` (and `pid`); other packets read meanwhile are kept, in order, for the next
        recv. A DISCONNECT from the server fails the wait."""
        deadline = time.monotonic() + timeout
        stash = []
        try:
            while True:
                pkt = self._try_parse()
                if pkt is None:
                    self._fill(deadline)
                    continue
                if pkt.ptype == ptype and (pid is None or pkt.pid == pid):
                    return pkt
                assert pkt.ptype != DISCONNECT, f"server sent {pkt!r} while waiting for {PACKET_NAMES[ptype]}"
                stash.append(pkt)
        finally:
            self.pending += stash

    def disconnect_within(self, timeout: float) -> Packet | None:
        """Waits for the server to end the connection: the DISCONNECT it sent (the socket must then close), or
        None if it closed without one. Other packets before it are ignored; AssertionError if the connection is
        still open after `timeout`."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            try:
                p = self.recv(max(0.0, deadline - time.monotonic()) or 0.001)
            except Closed:
                return None
            except TimeoutError:
                raise AssertionError(f"connection still open after {timeout}s; got {seen}") from None
            if p.ptype == DISCONNECT:
                assert self.closed_within(max(0.5, deadline - time.monotonic())), "DISCONNECT but no close"
                return p
            seen.append(p)

    def pid(self) -> int:
        p = self.next_pid
        self.next_pid = p % 65535 + 1
        return p

    # -- conveniences
    def connect(self, client_id: str | bytes = "", clean_start: bool = True, keepalive: int = 60, props=None,
                **kw) -> Packet:
        """Sends CONNECT and returns the CONNACK."""
        self.send(connect(client_id, clean_start, keepalive, props, **kw))
        return self.expect(CONNACK)

    def connect_ok(self, client_id: str | bytes = "", clean_start: bool = True, keepalive: int = 60, props=None,
                   **kw) -> Packet:
        """Connects, asserts reason code 0 and returns the CONNACK."""
        ack = self.connect(client_id, clean_start, keepalive, props, **kw)
        assert ack.reason == 0, f"CONNACK refused: {ack!r}"
        return ack

    def subscribe(self, filters: list[tuple[str, int]], props=None, pid: int | None = None) -> list[int]:
        """SUBSCRIBE (options bytes) and the SUBACK's reason codes."""
        pid = self.pid() if pid is None else pid
        self.send(subscribe(pid, filters, props))
        return self.wait_for(SUBACK, pid).reasons

    def unsubscribe(self, filters: list[str], props=None) -> list[int]:
        pid = self.pid()
        self.send(unsubscribe(pid, filters, props))
        return self.wait_for(UNSUBACK, pid).reasons

    def publish(self, topic: str, payload: bytes = b"", qos: int = 0, retain: bool = False, props=None) -> Packet | None:
        """Publishes and completes the flow (QoS 1: PUBACK; QoS 2: PUBREC, PUBREL, PUBCOMP); returns the PUBACK
        or PUBREC (its reason code), None at QoS 0."""
        if qos == 0:
            self.send(publish(topic, payload, 0, retain=retain, props=props))
            return None
        pid = self.pid()
        self.send(publish(topic, payload, qos, pid, retain, props=props))
        if qos == 1:
            return self.wait_for(PUBACK, pid)
        rec = self.wait_for(PUBREC, pid)
        if rec.reason < 0x80:
            self.send(pubrel(pid))
            self.wait_for(PUBCOMP, pid)
        return rec

    def next_publish(self, timeout: float = DEFAULT_TIMEOUT, ack: bool = True) -> Packet:
        """The next PUBLISH (any other packet fails the test); QoS 1 is acknowledged and QoS 2 completed when
        `ack`."""
        p = self.expect(PUBLISH, timeout)
        if ack:
            self.ack(p)
        return p

    def ack(self, p: Packet) -> None:
        if p.qos == 1:
            self.send(puback(p.pid))
        elif p.qos == 2:
            self.send(pubrec(p.pid))
            self.wait_for(PUBREL, p.pid)
            self.send(pubcomp(p.pid))

    def publishes(self, n: int, timeout: float = DEFAULT_TIMEOUT) -> list[Packet]:
        deadline = time.monotonic() + timeout
        return [self.next_publish(max(0.01, deadline - time.monotonic())) for _ in range(n)]

    def __enter__(self) -> "Raw5Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
