#!/usr/bin/env bash
# Installs everything mqttchat needs to build, run and test on a fresh Debian machine.
# Idempotent: packages already present are not fetched again.
set -euo pipefail

# ejabberd: its mod_mqtt is the peer broker with a WebSocket listener (scripts/ejabberd-peer.sh), since Debian 12's
# mosquitto 2.0.11 cannot open one here.
APT_PACKAGES=(libmosquitto-dev mosquitto mosquitto-clients protobuf-compiler libsqlite3-dev openssl python3-pip ejabberd)
PIP_PACKAGES=(paho-mqtt pytest)

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

# ejabberd's Debian package installs a system service (XMPP on 5222, its own epmd). The peer script starts a node of
# its own on free loopback ports instead, so the packaged service must neither run nor start at boot.
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
