#!/usr/bin/env bash
# Installs everything mqttchat needs to build, run and test on a fresh Debian machine.
# Idempotent: packages already present are not fetched again.
set -euo pipefail

# node-mqtt + node-browserify make the browser chat's MQTT bundle (below); chromium + chromium-driver run
# the browser test (Tests/e2e/test_webchat.py) headless, driven by selenium. ejabberd: its mod_mqtt is the peer
# broker with a WebSocket listener (scripts/ejabberd-peer.sh), since Debian 12's mosquitto 2.0.11 cannot open one
# here, and the 3-node cluster of Tests/e2e/test_cluster_*.py (scripts/cluster.sh; it needs nothing more than the
# package's own dependencies: erl and epmd from erlang-base).
APT_PACKAGES=(libmosquitto-dev mosquitto mosquitto-clients protobuf-compiler libsqlite3-dev openssl python3-pip
  nodejs node-mqtt node-browserify chromium chromium-driver ejabberd)
PIP_PACKAGES=(paho-mqtt pytest selenium)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing apt packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# mosquitto's Debian package starts a system broker on port 1883; our tests and the
# main job want that port (and a quiet machine), so keep the system service stopped.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mosquitto 2>/dev/null; then
  echo "setup: stopping the system mosquitto service (it holds port 1883, which the tests and scripts/run.sh use)" >&2
  systemctl stop mosquitto || true
fi

# Prometheus scrapes the broker's metrics listener in Tests/e2e/test_metrics.py, which starts its own server on a
# free port with its own storage. Installed on its own without recommends: they would add prometheus-node-exporter,
# one more system service nothing here uses.
if ! dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing apt package: prometheus"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
# The package starts a system server on port 9090 that scrapes itself forever: the tests do not want it, and nor
# does a build machine, so stop it and keep it from coming back at boot.
if command -v systemctl >/dev/null 2>&1 && systemctl list-unit-files prometheus.service >/dev/null 2>&1; then
  if systemctl is-active --quiet prometheus 2>/dev/null; then
    echo "setup: stopping the system prometheus service (the metrics test runs a Prometheus of its own)" >&2
    systemctl stop prometheus || true
  fi
  if systemctl is-enabled --quiet prometheus 2>/dev/null; then
    systemctl disable --quiet prometheus || true
  fi
elif [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
  # No systemd (a container): the package's init script may have started it.
  echo "setup: stopping the system prometheus service (the metrics test runs a Prometheus of its own)" >&2
  /etc/init.d/prometheus stop >/dev/null || true
fi

# ejabberd's Debian package installs a system service (XMPP on 5222, its own epmd). The peer script starts a node of
# its own on free loopback ports instead (as does scripts/cluster.sh, three of them), so the packaged service must
# neither run nor start at boot.
if command -v systemctl >/dev/null 2>&1; then
  if systemctl is-active --quiet ejabberd 2>/dev/null; then
    echo "setup: stopping the system ejabberd service (scripts/ejabberd-peer.sh starts its own node for the tests)" >&2
    systemctl stop ejabberd || true
  fi
  if systemctl is-enabled --quiet ejabberd 2>/dev/null; then
    echo "setup: disabling the system ejabberd service" >&2
    systemctl disable ejabberd >/dev/null 2>&1 || true
  fi
fi

pip_missing=()
for pkg in "${PIP_PACKAGES[@]}"; do
  python3 -m pip show -q "$pkg" >/dev/null 2>&1 || pip_missing+=("$pkg")
done
if [ ${#pip_missing[@]} -gt 0 ]; then
  echo "setup: installing pip packages: ${pip_missing[*]}"
  if ! python3 -m pip install -q "${pip_missing[@]}" 2>/dev/null; then
    echo "setup: pip install failed (Debian's system Python is externally managed); retrying with --break-system-packages" >&2
    python3 -m pip install -q --break-system-packages "${pip_missing[@]}"
  fi
fi

# The browser chat (web/) loads mqtt.js as web/vendor/mqtt.bundle.js. Debian's node-mqtt has no browser build,
# so browserify makes one; it is generated, never committed (web/vendor/ is in .gitignore), and rebuilt only
# when missing or older than any file of node-mqtt. Without NODE_PATH browserify cannot find its own modules.
bundle="$(cd "$(dirname "$0")/.." && pwd)/web/vendor/mqtt.bundle.js"
mqtt_js_dir=/usr/share/nodejs/mqtt
if [ ! -s "$bundle" ] || [ -n "$(find "$mqtt_js_dir" -newer "$bundle" -print -quit 2>/dev/null)" ]; then
  echo "setup: bundling mqtt.js for the browser chat ($bundle)"
  mkdir -p "$(dirname "$bundle")"
  NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs browserify "$mqtt_js_dir/mqtt.js" -s mqtt -o "$bundle.tmp"
  mv "$bundle.tmp" "$bundle"
fi
