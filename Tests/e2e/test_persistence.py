"""Durable persistence of the mqttchat broker (`persistence true`): restarts, kill -9 under load,
and damaged files. These tests run against our broker only (mosquitto's persistence is a periodic
save, not a per-message guarantee), so they skip when MQTTCHAT_BIN is unset."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

import mqtt_raw as raw
from conftest import Broker, Client, mqttchat_bin

pytestmark = pytest.mark.skipif(mqttchat_bin() is None, reason="MQTTCHAT_BIN is unset: these tests need our broker")


@pytest.fixture
def pbroker(tmp_path, request):
    """Factory: a started mqttchat broker with persistence in tmp_path/data (stopped at teardown)."""
    made: list[Broker] = []

    def factory(**options) -> Broker:
        data = tmp_path / "data"
        b = Broker("mqttchat", tmp_path, {"persistence": "true", "persistence_location": str(data),
                                          "max_queued_messages": 0, **options})
        b.data = data
        made.append(b)
        b.start()
        return b

    yield factory
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for b in made:
        b.stop()
        if failed:
            print(f"\n===== mqttchat output (port {b.port}) =====\n{b.output()}")


def kill9(b: Broker) -> None:
    """SIGKILL the broker: no final snapshot, no flush, nothing but what is already on disk."""
    assert b.proc is not None
    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait(5)
    b.proc = None
    if b._log_file is not None:
        b._log_file.close()
        b._log_file = None


def rewrite_config(b: Broker, **options) -> None:
    b.options.update(options)
    b.conf.write_text(b.config_text())


def run_broker_once(b: Broker, timeout: float = 10.0) -> subprocess.CompletedProcess:
    """Runs the broker with its config expecting it to exit (a refused start)."""
    return subprocess.run(b.command(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _uid(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------- (1) restart

def test_restart_keeps_persistent_sessions_and_retained(pbroker):
    b = pbroker()
    sub_id = _uid("psub")
    sub = Client(b.port, sub_id, clean=False).connect()
    assert sub.subscribe("pr/q", 2) == 2
    sub.disconnect()

    pub = Client(b.port, clean=True).connect()
    pub.publish("pr/retained", b"kept", qos=1, retain=True)
    pub.publish("pr/q", b"one", qos=1)
    pub.publish("pr/q", b"two", qos=2)
    pub.stop()

    b.restart()  # SIGTERM: graceful, with a final snapshot
    assert "persistence recovered" in b.output()

    sub = Client(b.port, sub_id, clean=False)
    try:
        sub.connect()
        assert sub.session_present
        got = sub.get_n(2)
        assert [(m.payload, m.qos) for m in got] == [(b"one", 1), (b"two", 2)]
        fresh = Client(b.port, clean=True).connect()
        try:
            fresh.subscribe("pr/retained", 1)
            m = fresh.get()
            assert (m.payload, m.retain) == (b"kept", True)
        finally:
            fresh.stop()
    finally:
        sub.stop()


# --------------------------------------------------------------------------- (2) kill -9 under load

class PahoClient(mqtt.Client):
    """paho 2.2 with one client-side fix for QoS 2 across repeated reconnect attempts: every attempt (also a
    refused one while the broker restarts) runs _messages_reconnect_reset_out, which turns "waiting for PUBCOMP"
    into "resend PUBREL" and, on the next attempt, "resend PUBREL" into a fresh PUBLISH with DUP=0: the broker,
    which already released that packet id, must then treat it as a new message. Keeping "resend PUBREL" as
    "waiting for PUBCOMP" makes the next attempt re-send PUBREL, as MQTT-4.4.0-1 intends."""

    def _messages_reconnect_reset_out(self) -> None:
        with self._out_message_mutex:
            for m in self._out_messages.values():
                if m.qos == 2 and m.state == mqtt.mqtt_ms_resend_pubrel:
                    m.state = mqtt.mqtt_ms_wait_for_pubcomp
        super()._messages_reconnect_reset_out()


class LoadPublisher:
    """A paho publisher that publishes (name, seq) payloads as fast as its window allows and records
    which sequence numbers the broker acknowledged (on_publish: PUBACK at QoS 1, PUBCOMP at QoS 2)."""

    def __init__(self, port: int, name: str, qos: int, clean: bool):
        self.name, self.qos, self.clean = name, qos, clean
        self.c = PahoClient(mqtt.CallbackAPIVersion.VERSION2, client_id=name, protocol=mqtt.MQTTv311,
                             clean_session=clean)
        self.c.reconnect_delay_set(1, 1)
        # paho 2.2 must never hold a message in its "queued" state: _handle_connack stops at the first queued message
        # and leaves later ones in "resend PUBREL", which the next reconnect turns into a fresh PUBLISH (a new
        # message to any broker). Our window (20) stays far below paho's inflight limit.
        self.c.max_inflight_messages_set(1000)
        self.c.max_queued_messages_set(0)
        self.lock = threading.Lock()
        self.mids: dict[int, int] = {}
        self.acked: set[int] = set()
        self.early: set[int] = set()
        self.sent = 0
        self.stop_flag = threading.Event()
        self.c.on_publish = self._on_publish
        self.c.connect("127.0.0.1", port, keepalive=5)
        self.c.loop_start()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _on_publish(self, c, u, mid, rc, props):
        with self.lock:
            seq = self.mids.pop(mid, None)
            if seq is None:
                self.early.add(mid)  # acknowledged before publish() returned its mid
            else:
                self.acked.add(seq)

    def _run(self):
        while not self.stop_flag.is_set():
            with self.lock:
                outstanding = len(self.mids)
            if outstanding >= 20:
                time.sleep(0.005)
                continue
            seq = self.sent
            # Never call into paho while holding our lock: its network thread takes the lock in on_publish.
            info = self.c.publish("load/" + self.name, f"{self.name}:{seq}".encode(), self.qos)
            with self.lock:
                if info.mid in self.early:
                    self.early.discard(info.mid)
                    self.acked.add(seq)
                else:
                    self.mids[info.mid] = seq
            self.sent += 1
            time.sleep(0.002)

    def unacked(self) -> int:
        with self.lock:
            return len(self.mids)

    def close(self):
        self.stop_flag.set()
        self.c.loop_stop()
        try:
            self.c.disconnect()
        except Exception:
            pass


class LoadSubscriber:
    def __init__(self, port: int, name: str, qos: int):
        self.name, self.qos = name, qos
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name, protocol=mqtt.MQTTv311,
                             clean_session=False)
        self.c.reconnect_delay_set(1, 1)
        self.lock = threading.Lock()
        self.received: collections.Counter = collections.Counter()
        self.qos_of: dict[str, int] = {}
        self.trace: dict[str, list] = collections.defaultdict(list)
        self.subscribed = threading.Event()
        self.c.on_message = self._on_message
        self.c.on_subscribe = lambda c, u, mid, rcs, p: self.subscribed.set()
        self.c.connect("127.0.0.1", port, keepalive=5)
        self.c.loop_start()
        self.c.subscribe("load/#", qos)
        assert self.subscribed.wait(5), f"{name}: no SUBACK"

    def _on_message(self, c, u, m):
        key = m.payload.decode()
        with self.lock:
            self.received[key] += 1
            self.qos_of[key] = m.qos
            self.trace[key].append((round(time.monotonic(), 3), m.mid, m.dup))

    def close(self):
        self.c.loop_stop()
        try:
            self.c.disconnect()
        except Exception:
            pass


def test_kill9_under_load_loses_no_acknowledged_message(pbroker):
    b = pbroker(max_inflight_messages=20)
    tag = uuid.uuid4().hex[:6]
    subs = [LoadSubscriber(b.port, f"ls1-{tag}", 1), LoadSubscriber(b.port, f"ls2a-{tag}", 2),
            LoadSubscriber(b.port, f"ls2b-{tag}", 2)]
    pubs = [LoadPublisher(b.port, f"lp1c-{tag}", 1, clean=True), LoadPublisher(b.port, f"lp1p-{tag}", 1, clean=False),
            LoadPublisher(b.port, f"lp2p-{tag}", 2, clean=False), LoadPublisher(b.port, f"lp2q-{tag}", 2, clean=False),
            LoadPublisher(b.port, f"lp2c-{tag}", 2, clean=True)]
    started = time.monotonic()
    try:
        for p in pubs:
            p.thread.start()
        kills = []
        for cycle in range(3):
            time.sleep(2.5)
            kills.append(round(time.monotonic(), 3))
            kill9(b)
            b.start()
        time.sleep(2.5)
        for p in pubs:
            p.stop_flag.set()
        publishing = time.monotonic() - started
        # Everyone reconnects and the publishers' windows drain.
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and any(p.unacked() for p in pubs):
            time.sleep(0.1)
        assert not any(p.unacked() for p in pubs), {p.name: p.unacked() for p in pubs}

        def missing_for(s):
            with s.lock:
                return [f"{p.name}:{seq}" for p in pubs for seq in p.acked if s.received[f"{p.name}:{seq}"] == 0]

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(missing_for(s) for s in subs):
            time.sleep(0.1)
        acked_total = sum(len(p.acked) for p in pubs)
        report = [f"{acked_total} acknowledged messages in {publishing:.1f}s of publishing, 3 kill -9 cycles"]
        for s in subs:
            missing = missing_for(s)
            assert not missing, f"{s.name} never received {len(missing)} acknowledged messages, e.g. {missing[:5]}"
            with s.lock:
                dups = {k: n for k, n in s.received.items() if n > 1}
            dup_by_pub = collections.Counter(k.split(":")[0] for k in dups)
            report.append(f"{s.name} (QoS {s.qos}): {sum(s.received.values())} received, duplicates {dict(dup_by_pub)}")
            for key in dups:
                publisher = next(p for p in pubs if key.startswith(p.name + ":"))
                delivered_qos = min(publisher.qos, s.qos)
                # Exactly once at QoS 2 between persistent sessions. A clean-session publisher's re-send after
                # a crash is a new session's message (its QoS 2 ids are never persisted), so it may repeat.
                if delivered_qos == 2 and not publisher.clean:
                    raise AssertionError(f"{s.name} received QoS 2 message {key} {dups[key]} times: "
                                         f"(time, mid, dup) {s.trace[key]}; kills at {kills}")
        print("\n" + "\n".join(report))
        b.stop()
        stats = [line for line in b.output().splitlines() if "persistence closing" in line or "persistence recovered" in line]
        print("\n".join(stats[-4:]))
    finally:
        for c in pubs + subs:
            c.close()


# --------------------------------------------------------------------------- (3) damaged files

def _fill_log(b: Broker, sub_id: str, count: int) -> None:
    c = raw.RawClient(b.port)
    c.connect_ok(sub_id, clean=False)
    c.subscribe([("dmg/#", 1)])
    c.send(raw.DISCONNECT_BYTES)
    c.close()
    p = raw.RawClient(b.port)
    p.connect_ok(_uid("dmg-pub"))
    for i in range(1, count + 1):
        p.publish_qos1(f"dmg/{i}", f"v{i}".encode(), pid=i)
    p.close()


def _record_offsets(log: Path) -> list[tuple[int, int]]:
    data = log.read_bytes()
    offsets, offset = [], 24
    while offset + 8 <= len(data):
        length = int.from_bytes(data[offset:offset + 4], "big")
        offsets.append((offset, 8 + length))
        offset += 8 + length
    return offsets


def _receive_payloads(b: Broker, sub_id: str, count: int) -> list[bytes]:
    c = raw.RawClient(b.port)
    try:
        assert c.connect_ok(sub_id, clean=False) is True
        got = []
        for _ in range(count):
            p = c.next_publish()
            c.send(raw.puback(p.pid))
            got.append(p.payload)
        return got
    finally:
        c.close()


def test_torn_log_tail_is_dropped_with_a_warning(pbroker):
    b = pbroker()
    sub_id = _uid("torn")
    _fill_log(b, sub_id, 5)
    kill9(b)
    log = b.data / "mqttchat.log"
    last_offset, last_size = _record_offsets(log)[-1]
    with open(log, "r+b") as f:
        f.truncate(last_offset + last_size - 3)  # cut inside the last record
    b.start()
    out = b.output()
    assert "torn tail" in out and f"offset={last_offset}" in out and f"bytes={last_size - 3}" in out, out
    payloads = sorted(_receive_payloads(b, sub_id, 4))
    assert payloads[:4] == [b"v1", b"v2", b"v3", b"v4"]


def test_damaged_log_record_refuses_to_start_unless_overridden(pbroker):
    b = pbroker()
    sub_id = _uid("flip")
    _fill_log(b, sub_id, 5)
    kill9(b)
    log = b.data / "mqttchat.log"
    offsets = _record_offsets(log)
    offset, _ = offsets[4]
    data = bytearray(log.read_bytes())
    data[offset + 12] ^= 0x40
    log.write_bytes(bytes(data))

    refused = run_broker_once(b)
    assert refused.returncode != 0
    assert str(log) in refused.stderr and f"record 5 at offset {offset}" in refused.stderr, refused.stderr
    assert "persistence_recover_partial" in refused.stderr

    rewrite_config(b, persistence_recover_partial="true")
    b.start()
    assert "damaged log" in b.output()
    assert any(name.startswith("mqttchat.log.damaged-") for name in os.listdir(b.data))
    # The session and its subscription (records 1 and 2) were kept.
    c = raw.RawClient(b.port)
    try:
        assert c.connect_ok(sub_id, clean=False) is True
    finally:
        c.close()


def test_damaged_snapshot_refuses_to_start(pbroker):
    b = pbroker()
    _fill_log(b, _uid("snap"), 3)
    b.stop()  # graceful: everything goes into the snapshot
    snapshot = b.data / "mqttchat.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[len(data) // 2] ^= 0x01
    snapshot.write_bytes(bytes(data))
    refused = run_broker_once(b)
    assert refused.returncode != 0
    assert str(snapshot) in refused.stderr and "damaged snapshot" in refused.stderr, refused.stderr
