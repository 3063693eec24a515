"""A paho-mqtt 2.x MQTT 5 client with bounded waits, and small helpers shared by the test_mqtt5_*.py files.

Used where a real library should see the same thing as our raw client (properties through paho's own encoder and
decoder); the raw client (mqtt5_raw.Raw5Client) is used for everything that checks bytes or reason codes.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

WAIT = 5.0


def cid(prefix: str) -> str:
    """A client identifier unique to this run."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def publish_properties(**fields) -> Properties:
    """paho PUBLISH properties: publish_properties(ContentType="x", UserProperty=[("k", "v")], ...)."""
    props = Properties(PacketTypes.PUBLISH)
    for name, value in fields.items():
        setattr(props, name, value)
    return props


class Client5:
    """paho-mqtt 2.x speaking MQTT 5 (protocol=MQTTv5); every wait is bounded by WAIT."""

    def __init__(self, port: int, client_id: str | None = None, connect_props: Properties | None = None,
                 clean_start: bool = True, login: tuple[str, str] | None = None):
        self.port = port
        self.client_id = client_id or cid("p5")
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=mqtt.MQTTv5)
        if login is not None:
            self.c.username_pw_set(*login)
        self.connect_props = connect_props
        self.clean_start = clean_start
        self.messages: "queue.Queue[mqtt.MQTTMessage]" = queue.Queue()
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self.connack: tuple | None = None
        self.disconnect_reason: int | None = None
        self._subacks: dict[int, list[int]] = {}
        self._unsubacks: dict[int, list[int]] = {}
        self._cv = threading.Condition()
        self.c.on_connect = self._on_connect
        self.c.on_disconnect = self._on_disconnect
        self.c.on_message = lambda c, u, m: self.messages.put(m)
        self.c.on_subscribe = self._on_subscribe
        self.c.on_unsubscribe = self._on_unsubscribe

    def _on_connect(self, c, u, flags, rc, props):
        self.connack = (flags.session_present, rc.value, props)
        self.connected.set()

    def _on_disconnect(self, c, u, flags, rc, props):
        self.disconnect_reason = rc.value
        self.disconnected.set()

    def _on_subscribe(self, c, u, mid, rcs, props):
        with self._cv:
            self._subacks[mid] = [r.value for r in rcs]
            self._cv.notify_all()

    def _on_unsubscribe(self, c, u, mid, rcs, props):
        with self._cv:
            self._unsubacks[mid] = [r.value for r in rcs]
            self._cv.notify_all()

    def will_set(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False,
                 properties: Properties | None = None) -> None:
        self.c.will_set(topic, payload, qos, retain, properties)

    def connect(self, keepalive: int = 10) -> "Client5":
        self.c.connect("127.0.0.1", self.port, keepalive=keepalive, clean_start=self.clean_start,
                       properties=self.connect_props)
        self.c.loop_start()
        assert self.connected.wait(WAIT), f"{self.client_id}: no CONNACK"
        assert self.connack[1] == 0, f"{self.client_id}: refused {self.connack}"
        return self

    def subscribe(self, topic: str, qos: int = 0, properties: Properties | None = None, **options) -> int:
        rc, mid = self.c.subscribe(topic, options=SubscribeOptions(qos=qos, **options), properties=properties)
        assert rc == mqtt.MQTT_ERR_SUCCESS
        with self._cv:
            assert self._cv.wait_for(lambda: mid in self._subacks, WAIT), "no SUBACK"
            return self._subacks[mid][0]

    def publish(self, topic: str, payload: bytes | str = b"", qos: int = 0, retain: bool = False,
                properties: Properties | None = None) -> None:
        info = self.c.publish(topic, payload, qos, retain, properties)
        info.wait_for_publish(WAIT)
        assert info.is_published(), f"publish to {topic} not completed"

    def get(self, timeout: float = WAIT) -> mqtt.MQTTMessage:
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.client_id}: no message within {timeout}s") from None

    def no_message(self, timeout: float = 0.5) -> None:
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected message {m.topic} {m.payload!r}")

    def stop(self) -> None:
        try:
            self.c.disconnect()
        except Exception:
            pass
        self.c.loop_stop()


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
