#!/usr/bin/env bash
# Runs paho.mqtt.testing's broker interoperability suites against mosquitto and/or our broker:
# client_test5.py (MQTT 5, 27 tests) and client_test.py (MQTT 3.1.1, 10 tests).
#
#   PAHO_TESTING_DIR=/path/to/paho.mqtt.testing/interoperability Benchmarks/scripts/paho-interop.sh [BROKERS] [SUITES]
#     BROKERS: mosquitto, mqttchat or all (default all; mqttchat needs MQTTCHAT_BIN)
#     SUITES:  client_test5, client_test or all (default all)
#   env: MQTTCHAT_BIN=path to the mqttchat executable (`$(swift build --show-bin-path)/mqttchat`)
#        PAHO_TEST_TIMEOUT=seconds per test (default 60)   PAHO_KEEP=1 keeps the temp dir (configs, logs)
#
# The paho code is not part of this repository: PAHO_TESTING_DIR is a checkout (or copy) of the `interoperability`
# folder of eclipse/paho.mqtt.testing, the folder holding client_test5.py, client_test.py and the `mqtt` package.
#
# For each broker and suite a fresh broker is started on a free loopback port with the config the suite needs:
#   - `max_keepalive 60`: client_test5's test_server_keep_alive connects with keepalive 120 and wants Server Keep Alive 60;
#   - an ACL (`topic deny test/nosubscribe`, everything else readwrite): both suites' test_subscribe_failure subscribe
#     to test/nosubscribe and want the failure code 0x80.
# Each test runs in its own process (`Test.<name>`), bounded by PAHO_TEST_TIMEOUT: some tests wait forever for what
# a broker never sends (client_test5's test_flow_control2 loops until a DISCONNECT 0x93 arrives), and one hung test
# must not hide the others. The suites' own argv handling passes argv on to unittest.main(), which refuses the
# suites' -p/--hostname options; a small wrapper gives unittest.main() only the test name.
#
# Prints one line per test (PASS/FAIL/TIMEOUT) and, per suite and broker, "passed X of Y: SUITE on BROKER".
# Exit status: 0 when every run was made (whatever the results), 2 on a usage error, 3 when a broker did not start.
set -uo pipefail

BROKERS="${1:-all}"
SUITES="${2:-all}"
TIMEOUT="${PAHO_TEST_TIMEOUT:-60}"
DIR="${PAHO_TESTING_DIR:-}"

if [[ -z "$DIR" || ! -f "$DIR/client_test5.py" || ! -f "$DIR/client_test.py" || ! -d "$DIR/mqtt" ]]; then
  echo "PAHO_TESTING_DIR must name paho.mqtt.testing's interoperability folder (client_test5.py, client_test.py," \
       "mqtt/); got '${DIR}'" >&2
  exit 2
fi
DIR="$(cd "$DIR" && pwd)"
case "$BROKERS" in all) BROKERS="mosquitto mqttchat" ;; mosquitto|mqttchat) ;; *) echo "unknown broker $BROKERS" >&2; exit 2 ;; esac
case "$SUITES" in all) SUITES="client_test5 client_test" ;; client_test5|client_test) ;; *) echo "unknown suite $SUITES" >&2; exit 2 ;; esac

WORK="$(mktemp -d /tmp/paho-interop.XXXXXX)"
BROKER_PID=""
stop_broker() {
  if [[ -n "$BROKER_PID" ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID" 2>/dev/null
  fi
  BROKER_PID=""
}
cleanup() {
  stop_broker
  if [[ "${PAHO_KEEP:-0}" == 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_broker KIND RUN_DIR: writes RUN_DIR/broker.conf, starts the broker, sets PORT and BROKER_PID.
start_broker() {
  local kind="$1" run="$2"
  PORT="$(free_port)"
  printf 'topic deny test/nosubscribe\ntopic readwrite #\n' > "$run/acl"
  {
    # mosquitto drops to the `mosquitto` user before reading the ACL file unless told to stay root.
    if [[ "$kind" == mosquitto && "$(id -u)" == 0 ]]; then echo "user root"; fi
    echo "log_dest stdout"
    echo "max_keepalive 60"
    echo "listener $PORT 127.0.0.1"
    echo "allow_anonymous true"
    echo "acl_file $run/acl"
  } > "$run/broker.conf"
  local cmd
  if [[ "$kind" == mosquitto ]]; then
    cmd=(mosquitto -c "$run/broker.conf")
  else
    cmd=("$MQTTCHAT_BIN" broker -c "$run/broker.conf")
  fi
  "${cmd[@]}" > "$run/broker.log" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 200); do
    if ! kill -0 "$BROKER_PID" 2>/dev/null; then
      echo "$kind exited at start:" >&2; cat "$run/broker.log" >&2; BROKER_PID=""; return 1
    fi
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $PORT), timeout=0.5).close()" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  echo "$kind not listening on $PORT within 10 s:" >&2; cat "$run/broker.log" >&2
  stop_broker
  return 1
}

# The wrapper: the suite parses its own options (getopt) from argv, then unittest.main() sees only the test name.
WRAPPER='
import os, runpy, sys, unittest
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
real_main = unittest.main
def main(*args, **kwargs):
    kwargs["argv"] = [script, "-v", os.environ["PAHO_TEST"]]
    return real_main(*args, **kwargs)
unittest.main = main
runpy.run_path(script, run_name="__main__")
'

status=0
summary=()
for kind in $BROKERS; do
  if [[ "$kind" == mqttchat && ( -z "${MQTTCHAT_BIN:-}" || ! -x "${MQTTCHAT_BIN:-}" ) ]]; then
    echo "skipping mqttchat: MQTTCHAT_BIN is unset or not executable" >&2
    summary+=("skipped: mqttchat (MQTTCHAT_BIN unset)")
    continue
  fi
  if [[ "$kind" == mosquitto ]] && ! command -v mosquitto > /dev/null; then
    echo "skipping mosquitto: not installed" >&2
    summary+=("skipped: mosquitto (not installed)")
    continue
  fi
  for suite in $SUITES; do
    run="$WORK/$kind-$suite"
    mkdir -p "$run"
    if ! start_broker "$kind" "$run"; then
      summary+=("passed 0 of ? : $suite on $kind (broker did not start)")
      status=3
      continue
    fi
    mapfile -t tests < <(grep -oE '^ +def (test[A-Za-z0-9_]*)' "$DIR/$suite.py" | sed -E 's/^ +def //')
    passed=0
    echo "== $suite on $kind (port $PORT, ${#tests[@]} tests, ${TIMEOUT}s each)"
    for t in "${tests[@]}"; do
      out="$run/$t.out"
      if ! kill -0 "$BROKER_PID" 2>/dev/null; then
        echo "  DEAD     $t (the broker has exited)"
        continue
      fi
      (cd "$DIR" && PAHO_TEST="Test.$t" timeout -k 5 "$TIMEOUT" \
         python3 -c "$WRAPPER" "$suite.py" --hostname 127.0.0.1 -p "$PORT" > "$out" 2>&1)
      rc=$?
      # One test per process: unittest exits 0 and ends with "OK" when it passed ("... ok" may be split from the
      # test's line by a warning).
      if [[ $rc == 0 ]] && grep -qE "^OK" "$out"; then
        echo "  PASS     $t"; passed=$((passed + 1))
      elif [[ $rc == 124 || $rc == 137 ]]; then
        echo "  TIMEOUT  $t (no result within ${TIMEOUT}s)"
      else
        echo "  FAIL     $t: $(grep -E '^(AssertionError|[A-Za-z]+Error|Exception)' "$out" | tail -1 | cut -c1-150)"
      fi
    done
    stop_broker
    line="passed $passed of ${#tests[@]}: $suite on $kind"
    echo "$line"
    summary+=("$line")
  done
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
