#!/usr/bin/env bash
# The main job: installs what is needed, builds mqttchat, and starts the mini broker
# on the shipped default config (broker-config/mqttchat.conf, 127.0.0.1:1883).
# Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build --product mqttchat
BIN="$(swift build --show-bin-path)/mqttchat"
exec "$BIN" broker -c broker-config/mqttchat.conf
