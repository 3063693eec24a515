"""Harness of the black-box MQTT 3.1.1 suite.

Every test that takes `broker` or `start_broker` runs twice: against a real mosquitto
(the reference) and against our broker (`$MQTTCHAT_BIN broker -c CONF`). The mqttchat runs
are skipped when MQTTCHAT_BIN is unset or not a file.
"""

from __future__ import annotations

import os
import queue
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import mqtt_raw  # noqa: E402

WAIT = 5.0
BROKER_KINDS = ["mosquitto", "mqttchat"]
# MQTTCHAT_E2E_KINDS=mqttchat runs the broker-parametrized tests against our broker only.
if os.environ.get("MQTTCHAT_E2E_KINDS"):
    BROKER_KINDS = [k for k in BROKER_KINDS if k in os.environ["MQTTCHAT_E2E_KINDS"].split(",")]
# Lines only our broker understands (mosquitto refuses unknown keys).
MQTTCHAT_ONLY_LINES = ["connect_timeout 2"]
# MQTTCHAT_E2E_THREADS=N sets our broker's `threads`. Its default is one loop, its own epoll loop (socket_engine
# auto); scripts/test.sh runs the suite's mqttchat cases once more with 2, where the broker serves sockets on
# SwiftNIO's loops, so both socket engines face it.
if os.environ.get("MQTTCHAT_E2E_THREADS"):
    MQTTCHAT_ONLY_LINES.append(f"threads {int(os.environ['MQTTCHAT_E2E_THREADS'])}")
# Options written before the `listener` line (global) and after it (per listener).
LISTENER_OPTIONS = {"max_qos"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One broker process: config in a tmp dir, output captured to a file, restartable on the
    same port with the same config."""

    # User name and password every client sends (the ejabberd peer's anonymous login wants them).
    login: tuple[str, str] | None = None

    def __init__(self, kind: str, tmp: Path, options: dict):
        self.kind = kind
        self.tmp = tmp
        self.port = free_port()
        options = dict(options)
        # websockets=True adds a second listener on a free port (`ws_port`) with `protocol websockets`; http_dir=DIR
        # gives it that directory to serve. Our broker only: mosquitto 2.0.11 cannot open one here (test_websockets).
        self.ws_port: int | None = free_port() if options.pop("websockets", False) else None
        self.http_dir = options.pop("http_dir", None)
        self.options = {"sys_interval": 1, **options}
        self.conf = tmp / f"{kind}.conf"
        self.log = tmp / f"{kind}.log"
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self.starts = 0
        self.conf.write_text(self.config_text())

    def config_text(self) -> str:
        lines = [f"{k} {v}" for k, v in self.options.items() if k not in LISTENER_OPTIONS]
        lines += ["log_dest stdout", f"listener {self.port} 127.0.0.1", "allow_anonymous true"]
        lines += [f"{k} {v}" for k, v in self.options.items() if k in LISTENER_OPTIONS]
        if self.kind == "mqttchat":
            lines += MQTTCHAT_ONLY_LINES
        return "\n".join(lines + self.websocket_listener_lines()) + "\n"

    def websocket_listener_lines(self) -> list[str]:
        """The `websockets=True` listener, last in the file: the options after a `listener` line belong to it."""
        if self.ws_port is None:
            return []
        lines = [f"listener {self.ws_port} 127.0.0.1", "protocol websockets"]
        return lines + ([f"http_dir {self.http_dir}"] if self.http_dir is not None else [])

    def command(self) -> list[str]:
        if self.kind == "mosquitto":
            return ["mosquitto", "-c", str(self.conf)]
        return [os.environ["MQTTCHAT_BIN"], "broker", "-c", str(self.conf)]

    def start(self, ready_timeout: float = 10.0) -> None:
        self.starts += 1
        self._log_file = open(self.log, "ab")
        self._log_file.write(f"---- start #{self.starts}: {' '.join(self.command())}\n".encode())
        self._log_file.flush()
        self.proc = subprocess.Popen(self.command(), stdout=self._log_file,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     **self.popen_options())
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}:\n{self.output()}")
            try:
                for port in [self.port] + ([self.ws_port] if self.ws_port is not None else []):
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.kind} not accepting connections on {self.port} within "
                           f"{ready_timeout}s:\n{self.output()}")

    def popen_options(self) -> dict:
        """Extra subprocess.Popen arguments for the broker process."""
        return {}

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return "<no output>"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # ---- clients bound to this broker
    def raw(self) -> mqtt_raw.RawClient:
        return mqtt_raw.RawClient(self.port)


class FileLimitBroker(Broker):
    """Our broker with a soft limit of `files` open descriptors (the hard limit unchanged)."""

    def __init__(self, tmp: Path, options: dict, files: int):
        self.files = files
        super().__init__("mqttchat", tmp, options)

    def popen_options(self) -> dict:
        files = self.files
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return {"preexec_fn": lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (files, hard))}


class AuthBroker(Broker):
    """A Broker whose config has no implicit `allow_anonymous true` and puts every option after the
    listener line (password_file, acl_file, allow_anonymous and max_connections are listener
    settings in mosquitto)."""

    def config_text(self) -> str:
        lines = []
        if self.kind == "mosquitto" and os.geteuid() == 0:
            # mosquitto drops to the `mosquitto` user before reading password and ACL files.
            lines.append("user root")
        lines += ["log_dest stdout", f"listener {self.port} 127.0.0.1"]
        lines += [f"{k} {v}" for k, v in self.options.items()]
        if self.kind == "mqttchat":
            lines += MQTTCHAT_ONLY_LINES
        return "\n".join(lines) + "\n"


def make_passwd_with_mosquitto(path, users: list[tuple[str, str]]) -> None:
    for index, (user, password) in enumerate(users):
        args = ["mosquitto_passwd", "-b"] + (["-c"] if index == 0 else []) + [str(path), user, password]
        subprocess.run(args, check=True, capture_output=True, timeout=10)


def mqttchat_bin() -> str | None:
    path = os.environ.get("MQTTCHAT_BIN")
    return path if path and os.path.isfile(path) else None


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(params=BROKER_KINDS)
def broker_kind(request) -> str:
    if request.param == "mqttchat" and mqttchat_bin() is None:
        pytest.skip("MQTTCHAT_BIN is unset or not a file: build mqttchat and export "
                    "MQTTCHAT_BIN=<path to the mqttchat executable>")
    if request.param == "mosquitto" and shutil.which("mosquitto") is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh installs it)")
    return request.param


def managed_brokers(request, make):
    """The body of a broker-factory fixture (`yield from managed_brokers(request, make)`): yields
    factory(*args, **kwargs), which builds a broker with make(index, *args, **kwargs) and starts it.
    At teardown every broker started is stopped, and when the test failed each one's config and
    output are printed."""
    started: list[Broker] = []

    def factory(*args, **kwargs):
        b = make(len(started), *args, **kwargs)
        started.append(b)
        b.start()
        return b

    yield factory
    failed = any(getattr(request.node, f"rep_{w}", None) is not None
                 and getattr(request.node, f"rep_{w}").failed for w in ("setup", "call"))
    for b in started:
        b.stop()
        if failed:
            print(f"\n===== {b.kind} config =====\n{b.config_text()}"
                  f"===== {b.kind} output (port {b.port}) =====\n{b.output()}")


@pytest.fixture
def start_broker(broker_kind, tmp_path, request):
    """Factory: start_broker(max_inflight_messages=1, ...) -> a running Broker (stopped at teardown)."""

    def make(index: int, **options) -> Broker:
        d = tmp_path / f"broker{index}"
        d.mkdir()
        return Broker(broker_kind, d, options)

    yield from managed_brokers(request, make)


@pytest.fixture
def broker(start_broker) -> Broker:
    return start_broker()


@pytest.fixture
def departure(request, broker_kind):
    """departure("mosquitto", reason) makes this test a strict xfail on that broker kind."""

    def mark(kind: str, reason: str) -> None:
        if broker_kind == kind:
            request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))

    return mark


# --------------------------------------------------------------------------- paho

class Client:
    """A paho-mqtt 2.x client (MQTT 3.1.1) with bounded waits on everything."""

    def __init__(self, port: int, client_id: str | None = None, clean: bool = True,
                 keepalive: int = 10, will: tuple | None = None, transport: str = "tcp",
                 login: tuple[str, str] | None = None):
        self.port = port
        self.client_id = client_id or f"t-{uuid.uuid4().hex[:12]}"
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                             protocol=mqtt.MQTTv311, clean_session=clean, transport=transport)
        if login is not None:
            self.c.username_pw_set(*login)
        if transport == "websockets":
            self.c.ws_set_options(path="/mqtt")  # paho offers the subprotocol "mqtt"
        self.keepalive = keepalive
        self.messages: "queue.Queue[mqtt.MQTTMessage]" = queue.Queue()
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self.connack: tuple | None = None
        self._subacks: dict[int, list[int]] = {}
        self._unsubacks: set[int] = set()
        self._cv = threading.Condition()
        if will is not None:
            self.c.will_set(*will)
        self.c.on_connect = self._on_connect
        self.c.on_disconnect = self._on_disconnect
        self.c.on_message = lambda c, u, m: self.messages.put(m)
        self.c.on_subscribe = self._on_subscribe
        self.c.on_unsubscribe = self._on_unsubscribe

    def _on_connect(self, c, u, flags, rc, props):
        self.connack = (flags.session_present, rc.value)
        self.connected.set()

    def _on_disconnect(self, c, u, flags, rc, props):
        self.disconnected.set()

    def _on_subscribe(self, c, u, mid, rcs, props):
        with self._cv:
            self._subacks[mid] = [r.value for r in rcs]
            self._cv.notify_all()

    def _on_unsubscribe(self, c, u, mid, rcs, props):
        with self._cv:
            self._unsubacks.add(mid)
            self._cv.notify_all()

    def connect(self) -> "Client":
        self.c.connect("127.0.0.1", self.port, keepalive=self.keepalive)
        self.c.loop_start()
        assert self.connected.wait(WAIT), f"{self.client_id}: no CONNACK"
        assert self.connack[1] == 0, f"{self.client_id}: refused {self.connack}"
        return self

    @property
    def session_present(self) -> bool:
        return bool(self.connack[0])

    def subscribe(self, topic: str, qos: int = 0) -> int:
        rc, mid = self.c.subscribe(topic, qos)
        assert rc == mqtt.MQTT_ERR_SUCCESS
        with self._cv:
            assert self._cv.wait_for(lambda: mid in self._subacks, WAIT), "no SUBACK"
            return self._subacks[mid][0]

    def unsubscribe(self, topic: str) -> None:
        rc, mid = self.c.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS
        with self._cv:
            assert self._cv.wait_for(lambda: mid in self._unsubacks, WAIT), "no UNSUBACK"

    def publish(self, topic: str, payload: bytes | str = b"", qos: int = 0, retain: bool = False) -> None:
        info = self.c.publish(topic, payload, qos, retain)
        info.wait_for_publish(WAIT)
        assert info.is_published(), f"publish to {topic} not completed"

    def get(self, timeout: float = WAIT) -> mqtt.MQTTMessage:
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.client_id}: no message within {timeout}s") from None

    def get_n(self, n: int, timeout: float = WAIT) -> list[mqtt.MQTTMessage]:
        deadline = time.monotonic() + timeout
        return [self.get(max(0.01, deadline - time.monotonic())) for _ in range(n)]

    def no_message(self, timeout: float = 0.5) -> None:
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected message {m.topic} {m.payload!r} qos={m.qos} retain={m.retain}")

    def disconnect(self) -> None:
        self.c.disconnect()
        self.disconnected.wait(WAIT)
        self.c.loop_stop()

    def stop(self) -> None:
        """Teardown: DISCONNECT if still connected, then stop the network thread."""
        try:
            self.c.disconnect()
        except Exception:
            pass
        self.c.loop_stop()


@pytest.fixture
def client_factory():
    """client_factory(broker, client_id=None, clean=True, keepalive=10, will=None, connect=True)."""
    made: list[Client] = []

    def factory(broker: Broker, client_id: str | None = None, clean: bool = True,
                keepalive: int = 10, will: tuple | None = None, connect: bool = True) -> Client:
        c = Client(broker.port, client_id, clean, keepalive, will, login=broker.login)
        made.append(c)
        return c.connect() if connect else c

    yield factory
    for c in made:
        c.stop()


@pytest.fixture
def raw_factory():
    """raw_factory(broker) -> RawClient, closed at teardown."""
    made: list[mqtt_raw.RawClient] = []

    def factory(broker: Broker) -> mqtt_raw.RawClient:
        c = broker.raw()
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close()


# --------------------------------------------------------------------------- ejabberd peer

REPO = Path(__file__).resolve().parents[2]
EJABBERD_PEER = REPO / "scripts" / "ejabberd-peer.sh"


class EjabberdPeer:
    """The ejabberd node scripts/ejabberd-peer.sh started: mod_mqtt on `port` (TCP) and on `ws_port` (WebSockets at
    /mqtt). Its anonymous login needs a non-empty user name and password, so every client sends `login`."""

    kind = "ejabberd"
    login = ("peer", "peer")

    def __init__(self, directory: Path, ports: dict[str, str]):
        self.directory = directory
        self.port = int(ports["mqtt_port"])
        self.ws_port = int(ports["ws_port"])
        self.ws_path = ports["ws_path"]

    def output(self) -> str:
        log = self.directory / "ejabberd.log"
        return log.read_text(errors="replace")[-4000:] if log.exists() else ""

    def raw(self) -> mqtt_raw.RawClient:
        return mqtt_raw.RawClient(self.port)


def ejabberd_installed() -> bool:
    libs = Path("/usr/lib/x86_64-linux-gnu")
    return shutil.which("erl") is not None and any(libs.glob("ejabberd-*/ebin/mod_mqtt.beam"))


@pytest.fixture(scope="module")
def ejabberd_peer(tmp_path_factory):
    """One ejabberd node for the module (a peer broker with a WebSocket listener), stopped with its epmd at the end.
    Skipped only when ejabberd is not installed (scripts/setup.sh installs it)."""
    if not ejabberd_installed():
        pytest.skip("ejabberd is not installed (scripts/setup.sh installs it)")
    directory = tmp_path_factory.mktemp("ejabberd-peer")
    try:
        up = subprocess.run([str(EJABBERD_PEER), "up", str(directory)], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        subprocess.run([str(EJABBERD_PEER), "down", str(directory)], capture_output=True, timeout=30)
        raise
    try:
        assert up.returncode == 0, f"ejabberd-peer.sh up failed ({up.returncode}):\n{up.stdout}{up.stderr}"
        ports = dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)
        yield EjabberdPeer(directory, ports)
    finally:
        subprocess.run([str(EJABBERD_PEER), "down", str(directory)], capture_output=True, timeout=30)


# The 3-node ejabberd cluster of test_cluster_*.py (scripts/cluster.sh), in a module of its own.
from cluster_support import ejabberd_cluster, ejabberd_cluster_session  # noqa: E402,F401


def unique(prefix: str = "e2e") -> str:
    return f"{prefix}/{uuid.uuid4().hex[:10]}"


# --------------------------------------------------------------------------- $SYS

def sys_values(port: int, wanted: set[str] | None = None, timeout: float = 3.0) -> dict[str, str]:
    """The retained $SYS values, read with a fresh raw client: every `$SYS/broker/#` topic until none arrives
    for 0.3 s, or only the `wanted` topics, returning as soon as all of them arrived (a short-lived reader then
    leaves before it could park itself)."""
    with mqtt_raw.RawClient(port) as c:
        c.connect_ok(unique("sys"))
        c.subscribe([(topic, 0) for topic in sorted(wanted)] if wanted else [("$SYS/broker/#", 0)])
        seen: dict[str, str] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (wanted and wanted <= seen.keys()):
            try:
                p = c.recv(max(0.01, deadline - time.monotonic()) if wanted else 0.3)
            except TimeoutError:
                break
            if p.ptype == mqtt_raw.PUBLISH:
                seen[p.topic] = p.payload.decode(errors="replace")
        return seen


def wait_sys(port: int, topic: str, predicate, timeout: float = 8.0,
             wanted: set[str] | None = None) -> dict[str, str]:
    """Polls $SYS (see `sys_values`) until `predicate(int(value of topic))` holds (sys_interval is 1 s)."""
    deadline = time.monotonic() + timeout
    values: dict[str, str] = {}
    while time.monotonic() < deadline:
        values = sys_values(port, wanted)
        if topic in values and predicate(int(values[topic])):
            return values
        time.sleep(0.3)
    raise AssertionError(f"{topic} never satisfied the condition: {values.get(topic)!r}\n{values}")


# --------------------------------------------------------------------------- mosquitto_pub / mosquitto_sub

def mosquitto_pub(broker: Broker, topic: str, message: str, qos: int = 0, retain: bool = False,
                  timeout: float = 10.0, extra: list[str] | None = None) -> subprocess.CompletedProcess:
    args = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "mqttv311",
            "-t", topic, "-m", message, "-q", str(qos)]
    if retain:
        args.append("-r")
    if broker.login is not None:
        args += ["-u", broker.login[0], "-P", broker.login[1]]
    args += extra or []
    r = subprocess.run(args, capture_output=True, timeout=timeout, text=True)
    assert r.returncode == 0, f"mosquitto_pub failed: {r.stderr}"
    return r


class SubProcess:
    """mosquitto_sub in the background, always bounded by -W and -C. Started with -d so that the
    harness can wait for its SUBACK ("Subscribed (mid: ...)") before the test publishes."""

    def __init__(self, broker: Broker, topic: str, count: int, qos: int = 0, wait: int = 8,
                 extra: list[str] | None = None):
        self.args = ["stdbuf", "-oL", "mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "mqttv311",
                     "-t", topic, "-q", str(qos), "-C", str(count), "-W", str(wait), "-d",
                     "-F", "MSG|%t|%q|%r|%p"] + (extra or [])
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, stdin=subprocess.DEVNULL)
        self.lines: "queue.Queue[str | None]" = queue.Queue()
        self.all_lines: list[str] = []
        self.wait_s = wait
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_subscribed(self, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"mosquitto_sub not subscribed: {self.all_lines}") from None
            if line is None:
                raise AssertionError(f"mosquitto_sub ended before SUBACK: {self.all_lines}")
            self.all_lines.append(line)
            if line.startswith("Subscribed"):
                return

    def result(self) -> list[tuple[str, int, int, str]]:
        """Message lines as (topic, qos, retain, payload), once mosquitto_sub has exited."""
        try:
            self.proc.wait(timeout=self.wait_s + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        rows = []
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                break
            self.all_lines.append(line)
        for line in self.all_lines:
            if line.startswith("MSG|"):
                _, t, q, r, p = line.split("|", 4)
                rows.append((t, int(q), int(r), p))
        return rows

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def sub_factory():
    made: list[SubProcess] = []

    def factory(*args, **kw) -> SubProcess:
        s = SubProcess(*args, **kw)
        made.append(s)
        return s

    yield factory
    for s in made:
        s.kill()


# --------------------------------------------------------------------------- MQTT 5 (test_mqtt5_*.py)

import mqtt5_raw  # noqa: E402


@pytest.fixture
def raw5_factory():
    """raw5_factory(broker) -> mqtt5_raw.Raw5Client on that broker's port, closed at teardown."""
    made: list[mqtt5_raw.Raw5Client] = []

    def factory(broker: Broker) -> mqtt5_raw.Raw5Client:
        c = mqtt5_raw.Raw5Client(broker.port)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close()


@pytest.fixture
def client5_factory():
    """client5_factory(broker, client_id=None, connect_props=None, clean_start=True, connect=True) -> a paho MQTT 5
    client (mqtt5_client.Client5), stopped at teardown."""
    import mqtt5_client
    made: list = []

    def factory(broker: Broker, client_id: str | None = None, connect_props=None, clean_start: bool = True,
                connect: bool = True):
        c = mqtt5_client.Client5(broker.port, client_id, connect_props, clean_start, login=broker.login)
        made.append(c)
        return c.connect() if connect else c

    yield factory
    for c in made:
        c.stop()


@pytest.fixture
def auth5_broker(broker_kind, tmp_path, request):
    """auth5_broker(acl=TEXT, passwd=[(user, password)], **options) -> a running AuthBroker (options after the
    listener line; no implicit allow_anonymous)."""

    def make(index: int, acl: str | None = None, passwd: list[tuple[str, str]] | None = None, **options) -> Broker:
        d = tmp_path / f"auth5-{index}"
        d.mkdir()
        if acl is not None:
            (d / "acl").write_text(acl)
            options["acl_file"] = d / "acl"
        if passwd is not None:
            make_passwd_with_mosquitto(d / "passwd", passwd)
            options["password_file"] = d / "passwd"
        return AuthBroker(broker_kind, d, options)

    yield from managed_brokers(request, make)
