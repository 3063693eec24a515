#!/usr/bin/env bash
# Runs every test of mqttchat (installing what they need first):
#   1. the Swift suites (swift test): codec, broker, client, chat — live tests start their own
#      brokers (ours in-process, and real mosquitto processes) on free loopback ports;
#   2. the black-box end-to-end suite (pytest Tests/e2e): paho-mqtt, mosquitto_pub/mosquitto_sub and
#      raw sockets against our broker and a real mosquitto, plus the built mqttchat CLI and examples;
#   3. a bounded libFuzzer run on the packet decoder (FUZZ_SECONDS, default 30).
# Every stage runs even if an earlier one fails; the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

failed=()
swift build --build-tests || { echo "test.sh: build failed" >&2; exit 1; }
swift test --skip-build || failed+=("swift test")

MQTTCHAT_BIN="$(swift build --show-bin-path)/mqttchat" \
  python3 -m pytest -q -p no:cacheprovider Tests/e2e || failed+=("pytest Tests/e2e")

bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}" || failed+=("fuzz")

if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test.sh: all stages passed"
