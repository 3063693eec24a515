#!/usr/bin/env bash
# Runs every test of mqttchat: the Swift test suites, then the black-box end-to-end
# suite (paho-mqtt, mosquitto_pub/mosquitto_sub, raw sockets) against our broker and a real mosquitto.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

swift build --build-tests
swift test --skip-build
if [ -n "$(ls Tests/e2e/test_*.py 2>/dev/null)" ]; then
  MQTTCHAT_BIN="$(swift build --show-bin-path)/mqttchat" python3 -m pytest -q Tests/e2e
fi
