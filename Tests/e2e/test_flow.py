"""Flow control and memory bounds (issues 5 and 6).

- Fan-in: N publishers -> 1 subscriber at QoS 1 and 2 with a small `max_queued_messages` must lose
  nothing (our broker pauses publishers that fill an online subscriber's queue; mosquitto paces them
  with its single thread). Driven by `mqttchat bench --json`, so it needs MQTTCHAT_BIN for both brokers.
- Slow consumers: subscribers that never read must not grow the broker's memory without limit, and must
  not slow the others down for good (mqttchat only: `max_pending_output_bytes`,
  `slow_consumer_timeout` and `backpressure_stall_ms` are our keys; mosquitto has no pending-output bound).
- 10,000 concurrent connections held with keepalive (mqttchat only; fd limits raised).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import struct
import subprocess
import threading
import time

import pytest

import mqtt_raw as raw
from conftest import Broker, Client, FileLimitBroker, mqttchat_bin, unique, wait_sys

# ------------------------------------------------------------------------------------------ helpers


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def start_mqttchat(tmp_path):
    """start_mqttchat(**options) -> our broker (only), always stopped at teardown."""
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")
    started: list[Broker] = []

    def factory(**options) -> Broker:
        d = tmp_path / f"broker{len(started)}"
        d.mkdir()
        b = Broker("mqttchat", d, options)
        started.append(b)
        b.start()
        return b

    yield factory
    for b in started:
        b.stop()


# ------------------------------------------------------------------------------------------ fan-in


@pytest.mark.parametrize("qos", [1, 2])
def test_fan_in_loses_nothing_with_a_small_queue(start_mqttchat, qos):
    """10 publishers -> 1 subscriber, max_queued_messages 100: every message arrives exactly once.
    Before publisher back-pressure our broker dropped ~90% of them here (the subscriber's queue
    overflowed). mqttchat only: mosquitto 2.0.11 drops about half of them with this queue limit
    ("Outgoing messages are being dropped"), by design."""
    broker = start_mqttchat(max_queued_messages=100, max_inflight_messages=20)
    bench = mqttchat_bin()
    r = subprocess.run([bench, "bench", "--port", str(broker.port), "--scenario", "fanin", "--qos", str(qos),
                        "--publishers", "10", "--messages", "1500", "--inflight", "20", "--timeout", "30",
                        "--drain", "5", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["published"] == 15000, result
    assert result["lost"] == 0, result
    assert result["delivered"] == 15000, result
    if qos == 2:
        assert result["duplicates"] == 0, result
    assert broker.alive()


# ------------------------------------------------------------------------------------------ slow consumers


class FloodPublisher:
    """A raw publisher that writes as fast as the broker reads; a thread discards what comes back
    (PUBACKs), counting them."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(raw.connect(unique("flood"), True, 60))
        head = self.sock.recv(4)
        assert head[:2] == b"\x20\x02" and head[3] == 0, head
        self.acks = 0
        self._stop = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        self.sock.settimeout(0.5)
        while not self._stop:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            self.acks += chunk.count(b"\x40\x02")  # PUBACK fixed header (approximate, for progress only)

    def flood(self, topic: str, count: int, qos: int, payload_size: int = 1024, batch: int = 200) -> None:
        pad = b"x" * (payload_size - 8)
        self.sock.settimeout(30)
        for start in range(0, count, batch):
            chunk = b"".join(raw.publish(topic, struct.pack("!Q", n) + pad, qos,
                                         pid=(n % 65535) + 1 if qos else None)
                             for n in range(start, min(count, start + batch)))
            self.sock.sendall(chunk)

    def close(self) -> None:
        self._stop = True
        try:
            self.sock.close()
        except OSError:
            pass
        self._reader.join(2)


def non_reading_subscriber(port: int, topic: str, qos: int) -> socket.socket:
    """Connects, subscribes and then never reads again (a small receive buffer makes it fill fast)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(raw.connect(unique(f"slow{qos}"), True, 0))
    assert s.recv(4)[3] == 0
    s.sendall(raw.subscribe(1, [(topic, qos)]))
    suback = s.recv(5)
    assert suback[0] == 0x90 and suback[4] == qos, suback
    return s


SLOW_OPTIONS = dict(max_queued_messages=1000, max_inflight_messages=20,
                    max_pending_output_bytes=262144, slow_consumer_timeout=3, backpressure_stall_ms=1000)


def test_slow_subscribers_do_not_hold_back_or_bloat_the_broker_at_qos1(start_mqttchat):
    """A QoS 0 and a QoS 1 subscriber stop reading; a fast QoS 1 subscriber on the same topic still gets
    every message, drops are counted in $SYS, the QoS 0 one is closed, and memory stays bounded."""
    broker = start_mqttchat(**SLOW_OPTIONS)
    clients: list = []
    try:
        topic = unique("flow/slow")
        rss_before = rss_kib(broker.proc.pid)
        slow0 = non_reading_subscriber(broker.port, topic, 0)
        slow1 = non_reading_subscriber(broker.port, topic, 1)
        clients += [slow0, slow1]
        fast = Client(broker.port)
        clients.append(fast)
        fast.connect()
        assert fast.subscribe(topic, 1) == 1
        pub = FloodPublisher(broker.port)
        clients.append(pub)

        count = 6000
        t0 = time.monotonic()
        pub.flood(topic, count, qos=1)
        got = set()
        deadline = time.monotonic() + 40
        while len(got) < count and time.monotonic() < deadline:
            try:
                m = fast.messages.get(timeout=1)
            except Exception:
                continue
            got.add(struct.unpack("!Q", m.payload[:8])[0])
        elapsed = time.monotonic() - t0
        assert len(got) == count, f"fast subscriber got {len(got)}/{count} in {elapsed:.1f}s"

        values = wait_sys(broker.port, "$SYS/broker/clients/slow_consumer_disconnects", lambda v: v >= 1)
        assert int(values["$SYS/broker/publish/messages/dropped/slow_consumer"]) > 0, values
        # The QoS 1 slow subscriber's queue stopped at max_queued_messages: the rest was dropped, counted.
        assert int(values["$SYS/broker/publish/messages/dropped/queue_full"]) >= count - 1000 - 20 - 1, values
        assert int(values["$SYS/broker/publish/messages/dropped"]) >= int(
            values["$SYS/broker/publish/messages/dropped/queue_full"]), values
        # The fast subscriber kept up, so the publisher was held back at most briefly and runs freely now.
        assert int(values["$SYS/broker/clients/backpressured"]) == 0, values
        growth_mib = (rss_kib(broker.proc.pid) - rss_before) / 1024
        print(f"\nQoS 1 flood of {count}: fast subscriber complete in {elapsed:.1f}s, RSS +{growth_mib:.1f} MiB, "
              + ", ".join(f"{k.removeprefix('$SYS/broker/')}={v}" for k, v in sorted(values.items())
                          if "dropped" in k or "slow" in k or "backpress" in k))
        assert growth_mib < 200, f"broker RSS grew by {growth_mib:.0f} MiB"
        assert broker.alive()
        assert "closing slow consumer" in broker.output()
    finally:
        for c in clients:
            c.close() if not isinstance(c, Client) else c.stop()


def test_slow_qos0_subscriber_is_cut_off_while_a_fast_one_keeps_receiving(start_mqttchat):
    """QoS 0 flood: the non-reading subscriber's copies are dropped once its output passes
    max_pending_output_bytes and it is closed after slow_consumer_timeout; the fast one keeps receiving."""
    broker = start_mqttchat(**SLOW_OPTIONS)
    clients: list = []
    try:
        topic = unique("flow/slow0")
        rss_before = rss_kib(broker.proc.pid)
        slow = non_reading_subscriber(broker.port, topic, 0)
        clients.append(slow)
        fast = Client(broker.port)
        clients.append(fast)
        fast.connect()
        assert fast.subscribe(topic, 0) == 0
        pub = FloodPublisher(broker.port)
        clients.append(pub)

        rounds, per_round = 8, 2500
        received_per_round = []
        for r in range(rounds):
            pub.flood(topic, per_round, qos=0)
            n = 0
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                try:
                    fast.messages.get(timeout=0.05)
                    n += 1
                except Exception:
                    pass
            received_per_round.append(n)
        # The fast subscriber kept receiving until the end, not only before the slow one filled up.
        assert all(n > 0 for n in received_per_round[-3:]), received_per_round

        values = wait_sys(broker.port, "$SYS/broker/clients/slow_consumer_disconnects", lambda v: v >= 1)
        assert int(values["$SYS/broker/publish/messages/dropped/slow_consumer"]) > 0, values
        # The slow connection is closed: reading it now ends in EOF once its buffered bytes are consumed.
        slow.settimeout(5)
        eof = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if not slow.recv(1 << 20):
                    eof = True
                    break
            except (ConnectionResetError, socket.timeout):
                eof = True
                break
        assert eof, "the slow consumer was not closed"
        growth_mib = (rss_kib(broker.proc.pid) - rss_before) / 1024
        print(f"\nQoS 0 flood of {rounds * per_round}: fast subscriber per round {received_per_round}, "
              f"RSS +{growth_mib:.1f} MiB, "
              + ", ".join(f"{k.removeprefix('$SYS/broker/')}={v}" for k, v in sorted(values.items())
                          if "dropped" in k or "slow" in k or "backpress" in k))
        assert growth_mib < 200, f"broker RSS grew by {growth_mib:.0f} MiB"
        assert broker.alive()
    finally:
        for c in clients:
            c.close() if not isinstance(c, Client) else c.stop()


def test_a_subscriber_that_stops_reading_gets_everything_once_it_reads_again(start_mqttchat):
    """A QoS 1 subscriber with a wide window (1,000) does not read while 12 MB are published to it: the broker
    blocks its output past max_pending_output_bytes and queues the rest. Each time the output drains, the
    queue refills the window at once, far past the hard bound of twice the limit; those messages were already
    in flight, so that burst must not close the subscriber as a slow consumer (it did). Once it reads, it
    gets every message, none twice."""
    broker = start_mqttchat(max_queued_messages=10000, max_inflight_messages=1000,
                            max_pending_output_bytes=262144, slow_consumer_timeout=60)
    clients: list = []
    try:
        topic = unique("flow/pause")
        sub = raw.RawClient(broker.port)
        clients.append(sub)
        sub.connect_ok(unique("paused"))
        assert sub.subscribe([(topic, 1)]) == [1]
        pub = FloodPublisher(broker.port)
        clients.append(pub)
        count = 1500
        pub.flood(topic, count, qos=1, payload_size=8192)
        deadline = time.monotonic() + 10
        while "output blocked" not in broker.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "output blocked" in broker.output(), "the broker never had to hold output back"

        got: list[int] = []
        deadline = time.monotonic() + 60
        while len(set(got)) < count and time.monotonic() < deadline:
            try:
                p = sub.recv(1)
                if p.ptype == raw.PUBLISH:
                    got.append(struct.unpack("!Q", p.payload[:8])[0])
                    sub.send(raw.puback(p.pid))
            except TimeoutError:
                continue
            except OSError as e:
                raise AssertionError(f"{e} after {len(got)} messages\n{broker.output()[-3000:]}")
        assert len(set(got)) == count, f"got {len(set(got))}/{count} after reading again\n{broker.output()[-3000:]}"
        assert len(got) == len(set(got)), "a message arrived twice"
        assert broker.alive()
    finally:
        for c in clients:
            c.close()


# ------------------------------------------------------------------------------------------ 10,000 connections

CONNECTIONS = 10_000


def test_ten_thousand_concurrent_connections(tmp_path):
    """10,000 raw MQTT connections with keepalive 30 s, held while some ping; a fresh client still
    publishes and subscribes. Prints the connect rate and the broker's RSS per connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < CONNECTIONS + 100:
        pytest.skip(f"hard fd limit {hard} < {CONNECTIONS + 100}: cannot hold {CONNECTIONS} connections")
    target = hard if hard != resource.RLIM_INFINITY else CONNECTIONS * 2 + 1000
    # Our own soft limit (the client ends); the broker gets the hard limit in preexec_fn below.
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file")

    broker = FileLimitBroker(tmp_path, {"log_level": "warning", "sys_interval": 0}, files=target)
    broker.start()
    try:
        rss_before = rss_kib(broker.proc.pid)
        stats = asyncio.run(_hold_connections(broker.port, CONNECTIONS))
        rss_held = stats["rss"] = rss_kib(broker.proc.pid)
        per_conn = (rss_held - rss_before) * 1024 / CONNECTIONS
        print(f"\n{CONNECTIONS} connections: connect {stats['connect_s']:.2f}s "
              f"({CONNECTIONS / stats['connect_s']:.0f}/s), pings {stats['pings']} ok, "
              f"broker RSS {rss_before} -> {rss_held} KiB ({per_conn:.0f} B/connection)")
        assert stats["connected"] == CONNECTIONS
        assert stats["pings"] == stats["pinged"]
        assert stats["fresh_round_trip"]
        assert broker.alive()
    finally:
        broker.stop()


async def _hold_connections(port: int, count: int) -> dict:
    connect_packet = raw.connect("", True, 30)
    streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    semaphore = asyncio.Semaphore(200)  # stay below the broker's accept backlog (256)

    async def open_one() -> None:
        async with semaphore:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
            writer.write(connect_packet)
            connack = await asyncio.wait_for(reader.readexactly(4), 10)
            assert connack == b"\x20\x02\x00\x00", connack
            streams.append((reader, writer))

    t0 = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.gather(*(open_one() for _ in range(count))), 60)
        connect_s = time.monotonic() - t0

        # Hold them; every 10th sends PINGREQ and must get PINGRESP, twice.
        pinged = pings = 0
        for _ in range(2):
            await asyncio.sleep(1)
            sample = streams[::10]
            for _, writer in sample:
                writer.write(b"\xc0\x00")
            replies = await asyncio.wait_for(
                asyncio.gather(*(reader.readexactly(2) for reader, _ in sample)), 15)
            pinged += len(sample)
            pings += sum(1 for r in replies if r == b"\xd0\x00")

        # A fresh client still works while all of them are held.
        fresh = await asyncio.to_thread(_fresh_round_trip, port)
        return {"connected": len(streams), "connect_s": connect_s, "pinged": pinged, "pings": pings,
                "fresh_round_trip": fresh}
    finally:
        for _, writer in streams:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for _, w in streams), return_exceptions=True)


def _fresh_round_trip(port: int) -> bool:
    with raw.RawClient(port) as sub, raw.RawClient(port) as pub:
        sub.connect_ok(unique("fresh-sub"))
        topic = unique("flow/fresh")
        assert sub.subscribe([(topic, 1)]) == [1]
        pub.connect_ok(unique("fresh-pub"))
        pub.publish_qos1(topic, b"still serving")
        return sub.next_publish(10).payload == b"still serving"
