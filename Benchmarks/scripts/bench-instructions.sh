#!/usr/bin/env bash
# Counts the instructions a broker executes per delivered message, with valgrind's callgrind: a figure that,
# unlike throughput and CPU time, does not move with a shared host's load (two runs of the same build agree
# within about 0.5%), so it can judge a change of a few percent that timed runs cannot.
#
#   Benchmarks/scripts/bench-instructions.sh BROKER...   # BROKER: a path to an mqttchat binary, or "mosquitto"
#   options: --scenario S (default fanin)  --qos Q (default 2)  --messages A,B (per publisher; default 1000,5000)
#            --bench-args "..." (more `mqttchat bench` options, e.g. "--publishers 10 --subscribers 10 --rate 5000")
#            --rates A,B (the two runs at these total rates, msg/s; with --messages in proportion both last as long,
#            so work that grows with time, not messages, cancels out too)
#            --pin CPU (run the broker on this CPU alone, as bench-broker.sh does: our broker then runs one loop)
#   one message at a time (the cold path of the latency runs):
#     --scenario pairs --qos 1 --rates 100,500 --messages 50,250 --pin 0 --bench-args "--publishers 10 --subscribers 10"
#   env: MQTTCHAT_GEN=path (the load generator; default: the first mqttchat binary given)
#
# Each broker runs under callgrind twice, once per message count; instructions per message =
# (instructions of the longer run - of the shorter) / (messages delivered in it - in the shorter), so start-up
# and shutdown cancel out. Under callgrind a broker runs some 50x slower, so batches differ from a timed run:
# compare builds with each other here, and use Benchmarks/scripts/bench-broker.sh for throughput. A statically linked
# Swift binary is stripped first (callgrind cannot read its debug information); counts are unchanged.
# Bounded: each run has a timeout; every broker started is stopped.
set -euo pipefail

SCENARIO=fanin
QOS=2
MESSAGES=1000,5000
BENCH_ARGS=""
RATES=""
PIN=()
BROKERS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) SCENARIO="$2"; shift ;;
    --qos) QOS="$2"; shift ;;
    --messages) MESSAGES="$2"; shift ;;
    --bench-args) BENCH_ARGS="$2"; shift ;;
    --rates) RATES="$2"; shift ;;
    --pin) PIN=(taskset -c "$2"); shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "unknown option: $1" >&2; exit 2 ;;
    *) BROKERS+=("$1") ;;
  esac
  shift
done
[ ${#BROKERS[@]} -gt 0 ] || { echo "usage: $0 [options] BROKER... (see --help)" >&2; exit 2; }
SHORT="${MESSAGES%,*}"
LONG="${MESSAGES#*,}"
# rate_args MESSAGES: the --rate of the run with that many messages per publisher (none without --rates)
rate_args() {
  [ -n "$RATES" ] || return 0
  if [ "$1" = "$SHORT" ]; then echo "--rate ${RATES%,*}"; else echo "--rate ${RATES#*,}"; fi
}

if ! command -v valgrind >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "bench-instructions: installing valgrind"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq valgrind >/dev/null
fi

GEN="${MQTTCHAT_GEN:-}"
if [ -z "$GEN" ]; then
  for broker in "${BROKERS[@]}"; do
    if [ "$broker" != mosquitto ]; then GEN="$broker"; break; fi
  done
fi
[ -n "$GEN" ] || { echo "no load generator: give an mqttchat binary or set MQTTCHAT_GEN" >&2; exit 2; }

TMP="$(mktemp -d)"
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ]; then kill "$BROKER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat > "$TMP/broker.conf" <<CONF
listener $PORT 127.0.0.1
allow_anonymous true
max_inflight_messages 20
max_queued_messages 100000
sys_interval 0
CONF

# Stops the broker with SIGINT (callgrind then writes its counts), and kills it after 60 s.
stop_broker() {
  kill -INT "$BROKER_PID" 2>/dev/null || true
  for _ in $(seq 1 120); do
    kill -0 "$BROKER_PID" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL "$BROKER_PID" 2>/dev/null || true
  wait "$BROKER_PID" 2>/dev/null || true
  BROKER_PID=""
}

# run_once LABEL EXECUTABLE MESSAGES -> prints "INSTRUCTIONS DELIVERED"
run_once() {
  local label="$1" executable="$2" messages="$3" out="$TMP/callgrind.$1.$3"
  local args=(broker -c "$TMP/broker.conf")
  # Started as root, mosquitto would switch to its own user and could not write the profile callgrind opened.
  [ "$label" = mosquitto ] && { { cat "$TMP/broker.conf"; echo "user root"; } > "$TMP/mosquitto.conf"; args=(-c "$TMP/mosquitto.conf"); }
  "${PIN[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" "$executable" "${args[@]}" \
    > "$TMP/broker.$label.$messages.log" 2>&1 &
  BROKER_PID=$!
  local ready=0
  for _ in $(seq 1 120); do
    if (echo > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then ready=1; break; fi
    sleep 0.5
  done
  if [ "$ready" = 0 ]; then
    echo "broker $label did not start; its log:" >&2
    tail -5 "$TMP/broker.$label.$messages.log" >&2
    stop_broker
    return 1
  fi
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
  timeout 300 "$GEN" bench --port "$PORT" --scenario "$SCENARIO" --qos "$QOS" --messages "$messages" $BENCH_ARGS \
    $(rate_args "$messages") --json \
    > "$TMP/bench.$label.$messages.json" 2> "$TMP/bench.$label.$messages.err" || true
  stop_broker
  local instructions delivered
  instructions="$(awk '/^(summary|totals):/ {print $2; exit}' "$out" 2>/dev/null || true)"
  # A run that timed out (a host too busy for a broker under callgrind) delivered only part of the load: refused.
  delivered="$(python3 -c '
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print("" if result.get("timedOut") else result["delivered"])' "$TMP/bench.$label.$messages.json" 2>/dev/null || true)"
  if [ -z "$instructions" ] || [ -z "$delivered" ]; then
    echo "no result for $label with $messages messages per publisher (broker failed or the run timed out)" >&2
    return 1
  fi
  echo "$instructions $delivered"
}

printf '%-40s %14s %14s %10s\n' broker "instr/msg" "delivered" "ratio"
FIRST=""
for broker in "${BROKERS[@]}"; do
  if [ "$broker" = mosquitto ]; then
    label=mosquitto
    executable="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
  else
    label="$(basename "$broker")"
    executable="$TMP/$label.stripped"
    strip -o "$executable" "$broker"
  fi
  if ! short="$(run_once "$label" "$executable" "$SHORT")" || ! long="$(run_once "$label" "$executable" "$LONG")"; then
    printf '%-40s %14s\n' "$broker" "n/a"
    continue
  fi
  read -r short_instructions short_delivered <<< "$short"
  read -r long_instructions long_delivered <<< "$long"
  per_message="$(python3 -c "print(round(($long_instructions - $short_instructions) / max(1, $long_delivered - $short_delivered)))")"
  [ -n "$FIRST" ] || FIRST="$per_message"
  ratio="$(python3 -c "print(f'{$per_message / $FIRST:.3f}')")"
  printf '%-40s %14s %14s %10s\n' "$broker" "$per_message" "$((long_delivered - short_delivered))" "$ratio"
done
echo "scenario $SCENARIO, QoS $QOS, $SHORT and $LONG messages per publisher ${RATES:+at $RATES msg/s }${BENCH_ARGS:+($BENCH_ARGS) }${PIN[*]:+(broker: ${PIN[*]}) }; ratio = broker / the first one"
