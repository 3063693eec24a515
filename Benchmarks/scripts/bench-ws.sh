#!/usr/bin/env bash
# MQTT over WebSockets: our broker (a `protocol websockets` listener, shipped limits) against an ejabberd 23.01 node
# (mod_mqtt behind `ejabberd_http` at /mqtt, started by scripts/ejabberd-peer.sh), with `mqttchat bench --transport ws`.
# Debian 12's mosquitto 2.0.11 cannot open a WebSocket listener on this machine, so ejabberd is the peer.
#
#   Benchmarks/scripts/bench-ws.sh     # 3 repetitions, brokers alternating: medians and ratios (ours / ejabberd)
#   options: --repeat R  --messages N (messages the publisher sends per run; default 20000)  --no-build
#            --keep (keep the temp dir with the brokers' logs)
#   env: MQTTCHAT_BIN=path (skip the build and use this binary)
#
# Runs: fan-out 1 -> 10 at QoS 1 over WebSockets (`--inflight 20`, our broker's shipped max_inflight_messages), and
# the same over plain TCP to both as a reference for what the WebSocket framing costs each broker. Every run reports
# the broker's CPU time and read/write system calls per delivered message (--broker-pid).
# A fixed message count, not a duration, with up to 60 s to drain: mod_mqtt acknowledges the publisher at once and
# queues for slow subscribers without bound (max_queue unlimited here; at its default of 5000 it closes them), so in
# a timed run ejabberd would take more messages than it delivers. Both brokers then get the same work, and
# delivered/s counts from the first send to the last delivery.
# Unpinned: both brokers and the load generator run free on all cores (ejabberd's VM has a scheduler per core; pinning
# it to one would measure a configuration nobody runs). Every client sends a user name and password, which ejabberd's
# anonymous login (`login_anon`) needs and our anonymous broker ignores.
# Bounded: every run has a timeout; the brokers started here are stopped on exit (ejabberd with its own epmd).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPEAT=3
MESSAGES=20000
BUILD=1
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) REPEAT="$2"; shift ;;
    --messages) MESSAGES="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done
INFLIGHT=20
RUN_TIMEOUT=150

# The build to deploy, as bench-broker.sh builds it: release, Swift runtime linked statically.
if [ -n "${MQTTCHAT_BIN:-}" ]; then
  BIN="$MQTTCHAT_BIN"
else
  BIN="$ROOT/.build-release/release/mqttchat"
  if [ "$BUILD" = 1 ]; then
    echo "bench-ws: building mqttchat (release, static Swift runtime, scratch path .build-release)..." >&2
    (cd "$ROOT" && timeout 1500 swift build -c release --static-swift-stdlib --scratch-path "$ROOT/.build-release" \
      --product mqttchat) >&2
  fi
fi
[ -x "$BIN" ] || { echo "bench-ws: $BIN not found" >&2; exit 1; }

TMP="$(mktemp -d /tmp/bench-ws.XXXXXX)"
OURS_PID=""
cleanup() {
  if [ -n "$OURS_PID" ]; then
    kill "$OURS_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$OURS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$OURS_PID" 2>/dev/null || true
  fi
  "$ROOT/scripts/ejabberd-peer.sh" down "$TMP/ejabberd" >/dev/null 2>&1 || true
  if [ "$KEEP" = 1 ]; then echo "bench-ws: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port, wait_port
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# --- brokers ------------------------------------------------------------------------------------------------
OURS_TCP="$(free_port)"; OURS_WS="$(free_port)"
cat > "$TMP/ours.conf" <<CONF
listener $OURS_TCP 127.0.0.1
allow_anonymous true
listener $OURS_WS 127.0.0.1
protocol websockets
CONF
"$BIN" broker -c "$TMP/ours.conf" > "$TMP/ours.log" 2>&1 &
OURS_PID=$!
wait_port "$OURS_WS" "$OURS_PID" && wait_port "$OURS_TCP" "$OURS_PID" \
  || { echo "bench-ws: our broker did not start: $(tail -3 "$TMP/ours.log")" >&2; exit 1; }

PEER_OUT="$(EJABBERD_MQTT_MAX_QUEUE=unlimited "$ROOT/scripts/ejabberd-peer.sh" up "$TMP/ejabberd")" \
  || { echo "bench-ws: the ejabberd peer did not start" >&2; exit 1; }
peer() { echo "$PEER_OUT" | sed -n "s/^$1=//p"; }
EJ_TCP="$(peer mqtt_port)"; EJ_WS="$(peer ws_port)"; EJ_PATH="$(peer ws_path)"; EJ_PID="$(peer pid)"

# --- runs ---------------------------------------------------------------------------------------------------
RUNS=("fanout-q1-ws|ws" "fanout-q1-tcp|tcp")
ARGS="--scenario fanout --publishers 1 --subscribers 10 --qos 1 --messages $MESSAGES --inflight $INFLIGHT"
ARGS="$ARGS --username bench --password bench --timeout 60 --drain 60 --json"
RESULTS="$TMP/results.tsv"
: > "$RESULTS"
run_one() {  # $1 = broker, $2 = run name, $3 = transport, $4 = port, $5 = path, $6 = pid
  local out
  # shellcheck disable=SC2086
  if out="$(timeout "$RUN_TIMEOUT" "$BIN" bench --transport "$3" --ws-path "$5" --port "$4" --broker-pid "$6" $ARGS \
      2>"$TMP/bench-stderr.txt")"; then
    printf '%s\t%s\t%s\n' "$2" "$1" "$(echo "$out" | tail -1)" >> "$RESULTS"
    echo "  $1: $(echo "$out" | head -1)" >&2
  else
    printf '%s\t%s\t%s\n' "$2" "$1" "FAILED" >> "$RESULTS"
    echo "  $1: FAILED ($(tail -2 "$TMP/bench-stderr.txt" | tr '\n' ' '))" >&2
  fi
}
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }
wait_quiet() {  # $@ = pids; until both have been idle for 0.4 s, at most 30 s
  local quiet=0 before after pid
  for _ in $(seq 1 150); do
    before=0; after=0
    for pid in "$@"; do before=$((before + $(cpu_ticks "$pid" || echo 0))); done
    sleep 0.2
    for pid in "$@"; do after=$((after + $(cpu_ticks "$pid" || echo 0))); done
    if [ $((after - before)) -le 1 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    [ "$quiet" -ge 2 ] && return 0
  done
  echo "  (the brokers were still busy after 30 s; running anyway)" >&2
}

echo "bench-ws: unpinned: brokers and load generator free on all $(nproc) cores" >&2
for rep in $(seq 1 "$REPEAT"); do
  for entry in "${RUNS[@]}"; do
    name="${entry%%|*}"; transport="${entry#*|}"
    echo "[rep $rep/$REPEAT] $name" >&2
    # Alternate which broker goes first from one repetition to the next.
    if [ $((rep % 2)) = 0 ]; then order="ours ejabberd"; else order="ejabberd ours"; fi
    for broker in $order; do
      wait_quiet "$OURS_PID" "$EJ_PID"
      if [ "$broker" = ours ]; then
        port=$([ "$transport" = ws ] && echo "$OURS_WS" || echo "$OURS_TCP")
        run_one ours "$name" "$transport" "$port" /mqtt "$OURS_PID"
      else
        port=$([ "$transport" = ws ] && echo "$EJ_WS" || echo "$EJ_TCP")
        run_one ejabberd "$name" "$transport" "$port" "$EJ_PATH" "$EJ_PID"
      fi
    done
  done
done

# --- summary ------------------------------------------------------------------------------------------------
echo
echo "MQTT over WebSockets: medians of $REPEAT repetition(s), brokers alternating; unpinned on $(nproc) cores."
echo "Fan-out 1 -> 10, QoS 1, $MESSAGES messages per run ($((MESSAGES * 10)) deliveries), --inflight $INFLIGHT."
echo "Ours: shipped limits (max_inflight_messages 20, max_queued_messages 1000)."
echo "ejabberd 23.01: mod_mqtt defaults but max_queue unlimited; scheduler busy-waiting off (+sbwt none)."
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
from collections import OrderedDict

rows = OrderedDict()
for line in open(sys.argv[1]):
    name, broker, payload = line.rstrip("\n").split("\t", 2)
    rows.setdefault(name, {"ours": [], "ejabberd": []})
    rows[name][broker].append(None if payload == "FAILED" else json.loads(payload))

def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def summary(results):
    ok = [r for r in results if r is not None]
    if not ok:
        return None
    usage = [r.get("brokerUsage") or {} for r in ok]
    return {"rate": median([r["deliveredPerSecond"] for r in ok]),
            "cpu": median([u.get("cpuMicrosPerDelivery") for u in usage]),
            "calls": median([u.get("syscallsPerDelivery") for u in usage]),
            "busy": median([u.get("busyFraction") for u in usage]),
            "lost": sum(r["lost"] for r in ok), "dup": sum(r["duplicates"] for r in ok),
            "failed": len(results) - len(ok), "all": [r["deliveredPerSecond"] for r in ok]}

def fmt(v, decimals=0):
    return "n/a" if v is None else f"{v:,.{decimals}f}"

def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"

header = f"{'run':<15} {'metric':<22} {'ours':>12} {'ejabberd':>12} {'ratio':>7}  {'lost o/e':>9} {'dup o/e':>8}"
print(header)
print("-" * len(header))
for name, by in rows.items():
    o, e = summary(by["ours"]), summary(by["ejabberd"])
    get = lambda x, k: x[k] if x else None
    counts = lambda k: f"{'n/a' if o is None else o[k]}/{'n/a' if e is None else e[k]}"
    failed = "".join(f"  ({who}: {x['failed']} failed)"
                     for who, x in (("ours", o), ("ejabberd", e)) if x and x["failed"])
    print(f"{name:<15} {'delivered msg/s':<22} {fmt(get(o,'rate')):>12} {fmt(get(e,'rate')):>12} "
          f"{ratio(get(o,'rate'), get(e,'rate')):>7}  {counts('lost'):>9} {counts('dup'):>8}{failed}")
    pairs = [f"{a / b:.2f}" for a, b in zip(get(o, "all") or [], get(e, "all") or []) if b]
    if len(pairs) > 1:
        print(f"{'':<15} {'ratio per repetition':<22} " + " ".join(f"{p:>6}" for p in pairs))
    busy = "/".join("n/a" if get(x, "busy") is None else f"{get(x, 'busy') * 100:.0f}%" for x in (o, e))
    print(f"{'':<15} {'broker CPU us/msg':<22} {fmt(get(o,'cpu'), 2):>12} {fmt(get(e,'cpu'), 2):>12} "
          f"{ratio(get(o,'cpu'), get(e,'cpu')):>7}  busy {busy}")
    print(f"{'':<15} {'read+write calls/msg':<22} {fmt(get(o,'calls'), 3):>12} {fmt(get(e,'calls'), 3):>12} "
          f"{ratio(get(o,'calls'), get(e,'calls')):>7}")
print()
print("ratio = ours / ejabberd (throughput: higher is better; CPU and calls per delivered message: lower is better).")
print("busy = broker CPU time / wall time (ejabberd's VM may use more than one core). lost/dup: totals over all runs.")
PY
