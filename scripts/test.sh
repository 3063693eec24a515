#!/usr/bin/env bash
# Runs every test of mqttchat (installing what they need first):
#   1. the Swift suites (swift test): codec, broker, client, chat — live tests start their own
#      brokers (ours in-process, and real mosquitto processes) on free loopback ports;
#   1b. the browser chat's JavaScript tests (node --test web/test/), including its codec against the golden bytes;
#   2. the Benchmarks package is built (debug), so the measurement tools keep compiling and the e2e suite
#      can run the latency-floor forwarders (NIORelayFloor, EpollRelayFloor) from it;
#   3. the black-box end-to-end suite (pytest Tests/e2e): paho-mqtt, mosquitto_pub/mosquitto_sub and
#      raw sockets against our broker and a real mosquitto, plus the built mqttchat CLI and examples, with
#      the broker's default of one socket loop (its own epoll loop for plain TCP, socket_engine auto);
#      then its cases for our broker once more with two loops (threads 2), where SwiftNIO serves the sockets;
#   4. a bounded libFuzzer run on the packet decoder (FUZZ_SECONDS, default 30).
# Every stage runs even if an earlier one fails; the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

failed=()
# Each stage's output is long and CI keeps only the tail of the whole run, so every stage's output is also
# saved, and the lines that say what failed are repeated at the end, where they are seen.
logs="$(mktemp -d "${TMPDIR:-/tmp}/mqttchat-test.XXXXXX")"
trap 'rm -rf "$logs"' EXIT

swift build --build-tests || { echo "test.sh: build failed" >&2; exit 1; }
swift test --skip-build 2>&1 | tee "$logs/swift-test.log" || failed+=("swift test")

# The browser chat's JavaScript (web/): its protobuf codec against the Swift layer's golden bytes
# (web/test/golden.json, kept current by the Swift suite above), presence, commands and reconnects.
if command -v node >/dev/null 2>&1; then
  node --test web/test/ 2>&1 | tee "$logs/node-test.log" || failed+=("node --test web/test")
else
  echo "test.sh: node is not installed, so the browser chat's tests (node --test web/test/) cannot run;" \
    "scripts/setup.sh installs it (apt nodejs)" >&2
  failed+=("node --test web/test")
fi

# The measurement tools are a package of their own (Benchmarks/, using this one by path).
bench_bin_dir=""
# Without manifest caching: the cached build plan of a package that uses this one by path missed source files
# added here since, and the build failed on types it could not find (a fresh clone never has the cache).
if swift build --package-path Benchmarks --disable-build-manifest-caching 2>&1 | tee "$logs/benchmarks-build.log"; then
  bench_bin_dir="$(swift build --package-path Benchmarks --show-bin-path)"
else
  failed+=("build Benchmarks")
fi

MQTTCHAT_BIN="$(swift build --show-bin-path)/mqttchat" MQTTCHAT_BENCH_BIN_DIR="$bench_bin_dir" \
  python3 -m pytest -q -rfEs -p no:cacheprovider Tests/e2e 2>&1 | tee "$logs/pytest.log" ||
  failed+=("pytest Tests/e2e")

MQTTCHAT_E2E_THREADS=2 MQTTCHAT_E2E_KINDS=mqttchat MQTTCHAT_BIN="$(swift build --show-bin-path)/mqttchat" \
  MQTTCHAT_BENCH_BIN_DIR="$bench_bin_dir" \
  python3 -m pytest -q -rfEs -p no:cacheprovider Tests/e2e 2>&1 | tee "$logs/pytest-two-loops.log" ||
  failed+=("pytest Tests/e2e (threads 2)")

bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}" || failed+=("fuzz")

if [ ${#failed[@]} -gt 0 ]; then
  for stage in "${failed[@]}"; do
    case "$stage" in
      "swift test")
        echo "test.sh: what failed in swift test (its first 60 lines that say so):" >&2
        grep -a -E '✘|error:|Fatal error|Test Case .* failed|unexpected signal|Exited with' \
          "$logs/swift-test.log" | head -n 60 >&2
        # A crash kills the whole test process; Swift's backtracer names the crashed thread's frames
        # between "Program crashed" and the register dump, which is what says where it happened.
        awk '/Program crashed/ {on = 1} /^Registers:/ {on = 0} on && shown < 80 {print; shown++}' \
          "$logs/swift-test.log" >&2 ;;
      "node --test web/test")
        echo "test.sh: what failed in node --test web/test:" >&2
        grep -a -E '^not ok|node is not installed' "$logs/node-test.log" | head -n 30 >&2 ;;
      "build Benchmarks")
        echo "test.sh: what failed in the Benchmarks build:" >&2
        grep -a -E 'error:' "$logs/benchmarks-build.log" | head -n 30 >&2 ;;
      "pytest Tests/e2e")
        echo "test.sh: what failed in pytest Tests/e2e:" >&2
        grep -a -E '^(FAILED|ERROR) ' "$logs/pytest.log" | head -n 60 >&2 ;;
      "pytest Tests/e2e (threads 2)")
        echo "test.sh: what failed in pytest Tests/e2e with threads 2:" >&2
        grep -a -E '^(FAILED|ERROR) ' "$logs/pytest-two-loops.log" | head -n 60 >&2 ;;
      *) ;;
    esac
  done
  echo "test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test.sh: all stages passed"
