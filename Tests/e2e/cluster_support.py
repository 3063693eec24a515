"""A real 3-node ejabberd cluster for the cluster tests (test_cluster_*.py), brought up by scripts/cluster.sh.

`ejabberd_cluster_session` starts the cluster once per pytest session (on first use) and stops it, with its epmd, at
the end. Tests take `ejabberd_cluster`, which makes sure all three nodes are running and joined before each test:
a test that killed a node leaves a cluster that `scripts/cluster.sh up` replaces with a fresh one (it reuses a
cluster only when all three nodes are alive). Each node behaves like a conftest `Broker` for the harness: `port`,
`login` and `kind`, so `Client`, `mosquitto_pub` and `SubProcess` work on it.

These tests are about ejabberd's cluster and our clients on it, not about our broker: they are skipped when
MQTTCHAT_E2E_KINDS is set and names no `ejabberd` kind (scripts/test.sh's second pass, MQTTCHAT_E2E_KINDS=mqttchat,
runs our broker's cases only), and when ejabberd is not installed (scripts/setup.sh installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import mqtt_raw

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SH = REPO / "scripts" / "cluster.sh"
# Login every client sends: ejabberd's anonymous login wants a non-empty user name and password.
LOGIN = ("cluster", "cluster")


class ClusterNode:
    """One ejabberd node of the cluster: mod_mqtt on `port` (TCP) and `ws_port` (WebSockets at /mqtt)."""

    kind = "ejabberd"
    login = LOGIN

    def __init__(self, index: int, values: dict[str, str], directory: Path):
        self.index = index
        self.port = int(values[f"node{index}_mqtt_port"])
        self.ws_port = int(values[f"node{index}_ws_port"])
        self.name = values[f"node{index}_node"]
        self.pid = int(values[f"node{index}_pid"])
        self.directory = directory / f"node{index}"

    def __repr__(self) -> str:
        return f"<node{self.index} {self.name} mqtt {self.port}>"

    def cli_args(self) -> list[str]:
        """Where `mqttchat publish|subscribe|chat` connects to reach this node, with the login ejabberd wants."""
        return ["-h", "127.0.0.1", "-p", str(self.port), "-u", LOGIN[0], "-P", LOGIN[1]]

    def raw(self) -> mqtt_raw.RawClient:
        return mqtt_raw.RawClient(self.port)

    def kill(self) -> None:
        """SIGKILL of the node's VM: a crash, no goodbye to the other nodes (the next test gets a fresh cluster)."""
        cmdline = Path(f"/proc/{self.pid}/cmdline")
        if cmdline.exists() and f"-sname\0{self.name}" in cmdline.read_bytes().decode(errors="replace"):
            os.kill(self.pid, signal.SIGKILL)
        # The VM is multi-threaded: its main thread can show as a zombie while the others still hold the listening
        # socket, so wait (bounded) for the port to close rather than for the process to go.
        deadline = time.monotonic() + 10
        while self.listening() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not self.listening(), f"{self} still accepts connections 10 s after SIGKILL"

    def listening(self) -> bool:
        import socket
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def output(self) -> str:
        log = self.directory / "ejabberd.log"
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""


class EjabberdCluster:
    """The cluster directory and `scripts/cluster.sh up|down` on it."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.nodes: list[ClusterNode] = []
        self.starts = 0

    def up(self) -> list[ClusterNode]:
        try:
            r = subprocess.run([str(CLUSTER_SH), "up", str(self.directory)], capture_output=True, text=True,
                               timeout=150)
        except subprocess.TimeoutExpired:
            self.down()
            raise
        assert r.returncode == 0, f"cluster.sh up failed ({r.returncode}):\n{r.stdout}{r.stderr}"
        if "reusing it" not in r.stderr:
            self.starts += 1
        values = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        self.nodes = [ClusterNode(i, values, self.directory) for i in (1, 2, 3)]
        return self.nodes

    def down(self) -> None:
        subprocess.run([str(CLUSTER_SH), "down", str(self.directory)], capture_output=True, timeout=60)

    def logs(self) -> str:
        return "".join(f"\n===== {n} ejabberd.log (tail) =====\n{n.output()}" for n in self.nodes)


def ejabberd_installed() -> bool:
    libs = Path("/usr/lib/x86_64-linux-gnu")
    return shutil.which("erl") is not None and any(libs.glob("ejabberd-*/ebin/mod_mqtt.beam"))


def cluster_kind_selected() -> bool:
    kinds = os.environ.get("MQTTCHAT_E2E_KINDS")
    return not kinds or any(k in ("ejabberd", "cluster") for k in kinds.split(","))


@pytest.fixture(scope="session")
def ejabberd_cluster_session(tmp_path_factory):
    """The session's EjabberdCluster (started on first use, stopped with its epmd at the end of the session)."""
    if not cluster_kind_selected():
        pytest.skip(f"MQTTCHAT_E2E_KINDS={os.environ['MQTTCHAT_E2E_KINDS']} names no ejabberd kind: the cluster "
                    "tests run in the suite's first pass only")
    if not ejabberd_installed():
        pytest.skip("ejabberd is not installed (scripts/setup.sh installs it)")
    cluster = EjabberdCluster(tmp_path_factory.mktemp("ejabberd-cluster"))
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def ejabberd_cluster(ejabberd_cluster_session, request) -> list[ClusterNode]:
    """The three nodes of a running, joined cluster ([node1, node2, node3]); their logs are printed if the test
    fails."""
    nodes = ejabberd_cluster_session.up()
    yield nodes
    failed = any(getattr(request.node, f"rep_{w}", None) is not None
                 and getattr(request.node, f"rep_{w}").failed for w in ("setup", "call"))
    if failed:
        print(ejabberd_cluster_session.logs())
