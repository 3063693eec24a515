"""Hand-built MQTT 3.1.1 packets and a raw-socket client.

Used where a library client would hide what is on the wire: malformed packets, QoS 2
handshakes driven step by step, exact CONNACK/SUBACK bytes, and "did the server close
the socket?" checks.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT = 8, 9, 10, 11, 12, 13, 14

PACKET_NAMES = {
    1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP",
    8: "SUBSCRIBE", 9: "SUBACK", 10: "UNSUBSCRIBE", 11: "UNSUBACK", 12: "PINGREQ", 13: "PINGRESP",
    14: "DISCONNECT",
}

DEFAULT_TIMEOUT = 5.0


# --------------------------------------------------------------------------- encoding

def remaining_length(n: int) -> bytes:
    """Variable-length encoding of section 2.2.3."""
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
    """A length-prefixed string (section 1.5.3); bytes are sent as given (to build bad input)."""
    data = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("!H", len(data)) + data


def packet(ptype: int, flags: int, body: bytes) -> bytes:
    return bytes([(ptype << 4) | flags]) + remaining_length(len(body)) + body


def connect(client_id: str = "", clean: bool = True, keepalive: int = 60, *,
            proto_name: str = "MQTT", level: int = 4,
            will: tuple[str, bytes, int, bool] | None = None,
            username: str | None = None, password: bytes | None = None) -> bytes:
    flags = 0x02 if clean else 0
    payload = utf8(client_id)
    if will is not None:
        topic, message, qos, retain = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += utf8(topic) + utf8(message)
    if username is not None:
        flags |= 0x80
        payload += utf8(username)
    if password is not None:
        flags |= 0x40
        payload += utf8(password)
    body = utf8(proto_name) + bytes([level, flags]) + struct.pack("!H", keepalive) + payload
    return packet(CONNECT, 0, body)


def publish(topic: str | bytes, payload: bytes = b"", qos: int = 0, pid: int | None = None,
            retain: bool = False, dup: bool = False) -> bytes:
    flags = (0x08 if dup else 0) | (qos << 1) | (0x01 if retain else 0)
    body = utf8(topic)
    if qos > 0:
        body += struct.pack("!H", 1 if pid is None else pid)
    return packet(PUBLISH, flags, body + payload)


def subscribe(pid: int, filters: list[tuple[str, int]]) -> bytes:
    body = struct.pack("!H", pid) + b"".join(utf8(f) + bytes([q]) for f, q in filters)
    return packet(SUBSCRIBE, 0x02, body)


def unsubscribe(pid: int, filters: list[str]) -> bytes:
    return packet(UNSUBSCRIBE, 0x02, struct.pack("!H", pid) + b"".join(utf8(f) for f in filters))


def puback(pid: int) -> bytes:
    return packet(PUBACK, 0, struct.pack("!H", pid))


def pubrec(pid: int) -> bytes:
    return packet(PUBREC, 0, struct.pack("!H", pid))


def pubrel(pid: int) -> bytes:
    return packet(PUBREL, 0x02, struct.pack("!H", pid))


def pubcomp(pid: int) -> bytes:
    return packet(PUBCOMP, 0, struct.pack("!H", pid))


PINGREQ_BYTES = bytes([0xC0, 0x00])
DISCONNECT_BYTES = bytes([0xE0, 0x00])


# --------------------------------------------------------------------------- decoding

@dataclass
class Packet:
    ptype: int
    flags: int
    body: bytes

    @property
    def name(self) -> str:
        return PACKET_NAMES.get(self.ptype, f"type{self.ptype}")

    @property
    def raw(self) -> bytes:
        return packet(self.ptype, self.flags, self.body)

    # PUBLISH fields
    @property
    def qos(self) -> int:
        return (self.flags >> 1) & 0x03

    @property
    def dup(self) -> bool:
        return bool(self.flags & 0x08)

    @property
    def retain(self) -> bool:
        return bool(self.flags & 0x01)

    @property
    def topic(self) -> str:
        (n,) = struct.unpack("!H", self.body[:2])
        return self.body[2:2 + n].decode("utf-8")

    @property
    def pid(self) -> int:
        """Packet identifier of a PUBLISH (QoS > 0) or of an ack/SUBACK/UNSUBACK."""
        if self.ptype == PUBLISH:
            (n,) = struct.unpack("!H", self.body[:2])
            return struct.unpack("!H", self.body[2 + n:4 + n])[0]
        return struct.unpack("!H", self.body[:2])[0]

    @property
    def payload(self) -> bytes:
        (n,) = struct.unpack("!H", self.body[:2])
        start = 2 + n + (2 if self.qos > 0 else 0)
        return self.body[start:]

    def __repr__(self) -> str:
        if self.ptype == PUBLISH:
            return (f"PUBLISH(topic={self.topic!r}, qos={self.qos}, dup={self.dup}, "
                    f"retain={self.retain}, payload={self.payload!r})")
        return f"{self.name}(flags={self.flags:#x}, body={self.body.hex()})"


class Closed(Exception):
    """The server closed the connection."""


class PacketSocket:
    """A blocking socket that reads whole MQTT packets; every read is bounded by a timeout. The packet format is
    the subclass's (`_try_parse`), so the 3.1.1 and the MQTT 5 raw clients share the I/O."""

    names = PACKET_NAMES

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=DEFAULT_TIMEOUT)
        self.buf = b""

    # -- io
    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no packet before the deadline")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout as e:
            raise TimeoutError("no packet before the deadline") from e
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed() from e
        if not chunk:
            raise Closed()
        self.buf += chunk

    def _try_parse(self):
        raise NotImplementedError

    def recv(self, timeout: float = DEFAULT_TIMEOUT):
        """The next packet; raises TimeoutError or Closed."""
        deadline = time.monotonic() + timeout
        while True:
            pkt = self._try_parse()
            if pkt is not None:
                return pkt
            self._fill(deadline)

    def expect(self, ptype: int, timeout: float = DEFAULT_TIMEOUT):
        pkt = self.recv(timeout)
        assert pkt.ptype == ptype, f"expected {self.names[ptype]}, got {pkt!r}"
        return pkt

    def expect_nothing(self, timeout: float) -> None:
        """No packet arrives (and the connection stays open) for `timeout` seconds."""
        try:
            pkt = self.recv(timeout)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected packet {pkt!r}")

    def closed_within(self, timeout: float) -> bool:
        """True if the server closes the connection within `timeout`; packets before the close are
        ignored."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.recv(max(0.0, deadline - time.monotonic()) or 0.001)
            except Closed:
                return True
            except TimeoutError:
                return False

    def drain(self, timeout: float = 0.3) -> list:
        out = []
        while True:
            try:
                out.append(self.recv(timeout))
            except (TimeoutError, Closed):
                return out

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class RawClient(PacketSocket):
    """A blocking MQTT 3.1.1 client over a plain socket; every read is bounded by a timeout."""

    def _try_parse(self) -> Packet | None:
        if len(self.buf) < 2:
            return None
        mult, length, i = 1, 0, 1
        while True:
            if i >= len(self.buf):
                return None
            b = self.buf[i]
            length += (b & 0x7F) * mult
            mult *= 128
            i += 1
            if not b & 0x80:
                break
        if len(self.buf) < i + length:
            return None
        first = self.buf[0]
        pkt = Packet(first >> 4, first & 0x0F, self.buf[i:i + length])
        self.buf = self.buf[i + length:]
        return pkt

    # -- conveniences
    def connect(self, client_id: str, clean: bool = True, keepalive: int = 60, **kw) -> Packet:
        """Sends CONNECT and returns the CONNACK."""
        self.send(connect(client_id, clean, keepalive, **kw))
        return self.expect(CONNACK)

    def connect_ok(self, client_id: str, clean: bool = True, keepalive: int = 60, **kw) -> bool:
        """Connects, asserts return code 0 and returns the session-present flag."""
        ack = self.connect(client_id, clean, keepalive, **kw)
        assert ack.body[1] == 0, f"CONNACK refused: {ack!r}"
        return bool(ack.body[0] & 0x01)

    def subscribe(self, filters: list[tuple[str, int]], pid: int = 1) -> list[int]:
        self.send(subscribe(pid, filters))
        ack = self.expect(SUBACK)
        assert ack.pid == pid
        return list(ack.body[2:])

    def publish_qos1(self, topic: str, payload: bytes, pid: int = 1, retain: bool = False) -> None:
        self.send(publish(topic, payload, 1, pid, retain))
        ack = self.expect(PUBACK)
        assert ack.pid == pid

    def next_publish(self, timeout: float = DEFAULT_TIMEOUT) -> Packet:
        """The next PUBLISH, skipping nothing else: any other packet fails the test."""
        return self.expect(PUBLISH, timeout)

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
