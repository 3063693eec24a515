#!/usr/bin/env bash
# Compares our broker (`mqttchat broker`) with mosquitto under identical limits, using `mqttchat bench`.
#
#   Benchmarks/scripts/bench-broker.sh            # 3 repetitions of every run: medians, ratios (ours / mosquitto)
#                                                 # and each repetition's ratio
#   Benchmarks/scripts/bench-broker.sh --quick    # 1 short repetition
#   options: --repeat R  --no-build  --keep (keep the temp dir with broker logs and raw JSON)
#            --protocol V (MQTT version of every run against both brokers: 311, the default, or 5; also mqttv311,
#            mqttv5) --topic-alias (with --protocol 5: publishers send Topic Alias 1 after their first message)
#            --latency-runs K (alternating pairs of each latency run per repetition; default 3)
#            --unpinned (no taskset: brokers and load generator free on all cores; default: brokers on core 0,
#            the load generator on core 1)
#   env: MQTTCHAT_BIN=path (skip the build and use this binary)
#        MQTTCHAT_EXTRA_CONF=lines (config lines appended to OUR broker's config only, e.g. $'threads 2')
#
# The build is the one to deploy: release, with the Swift runtime linked statically (`--static-swift-stdlib`, as
# the Swift server guides recommend). Calls into the runtime (retain, release, exclusivity checks and their
# thread-local lookups) are then direct calls instead of calls through a shared library's PLT and
# `__tls_get_addr`; no check is turned off.
#
# Runs: fan-out 1->10, pairs 10->10, fan-in 10->1 at QoS 0, 1, 2 (fixed duration each), two fixed-rate latency
# runs (pairs 10->10, QoS 1, 5,000 msg/s in total: one evenly spaced stream, and the same rate as a burst of 10
# messages every 2 ms), and an idle-connections run (19,000 connections, 2,000 with
# --quick, on a freshly started broker: connect rate and broker memory per connection; the same run against
# NIOFloorServer, a bare SwiftNIO server with no MQTT state built from the Benchmarks package, gives the memory
# floor of one NIO channel per connection). Every run also reports the broker's CPU time and read/write system calls per delivered message.
# Brokers are run alternately for every run of every repetition. When our broker cannot be built
# or started, its column says n/a and the mosquitto side still runs.
# Bounded: every run has a timeout; every broker started is stopped on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"   # the main package; this script is in Benchmarks/scripts
REPEAT=3
# A latency run's p99 moves by 10-30% from one run to the next on a shared host, far more than throughput does, so
# each repetition runs the latency runs this many times (brokers alternating): 9 pairs in a table of 3 repetitions.
LATENCY_RUNS=3
QUICK=0
BUILD=1
KEEP=0
PIN=1
EXTRA_CONF="${MQTTCHAT_EXTRA_CONF:-}"
PROTOCOL=311
TOPIC_ALIAS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPEAT=1; LATENCY_RUNS=1 ;;
    --repeat) REPEAT="$2"; shift ;;
    --latency-runs) LATENCY_RUNS="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    --unpinned) PIN=0 ;;
    --protocol) PROTOCOL="$2"; shift ;;
    --topic-alias) TOPIC_ALIAS=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

case "$PROTOCOL" in
  311|mqttv311|3.1.1) PROTOCOL=311 ;;
  5|mqttv5) PROTOCOL=5 ;;
  *) echo "bench-broker: --protocol must be 311 or 5, got '$PROTOCOL'" >&2; exit 2 ;;
esac
if [ "$TOPIC_ALIAS" = 1 ] && [ "$PROTOCOL" != 5 ]; then
  echo "bench-broker: --topic-alias needs --protocol 5" >&2; exit 2
fi
# Passed to every `mqttchat bench` run, against both brokers.
PROTOCOL_ARGS="--protocol $PROTOCOL"
[ "$TOPIC_ALIAS" = 1 ] && PROTOCOL_ARGS="$PROTOCOL_ARGS --topic-alias"
if [ "$PROTOCOL" = 5 ]; then PROTOCOL_NOTE="MQTT 5"; else PROTOCOL_NOTE="MQTT 3.1.1"; fi
[ "$TOPIC_ALIAS" = 1 ] && PROTOCOL_NOTE="$PROTOCOL_NOTE with topic aliases"

# Idle connections: the broker and the load generator each hold one descriptor per connection; raise the soft
# limit to the hard one (20,000 on the project's machines) and stay 1,000 below it.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
FD_LIMIT="$(ulimit -n)"
if [ "$QUICK" = 1 ]; then
  DURATION=1.5; LATENCY_DURATION=2; IDLE_CONNECTIONS=2000
else
  DURATION=5; LATENCY_DURATION=5; IDLE_CONNECTIONS=19000
fi
if [ "$FD_LIMIT" != unlimited ] && [ "$IDLE_CONNECTIONS" -gt $((FD_LIMIT - 1000)) ]; then
  IDLE_CONNECTIONS=$((FD_LIMIT - 1000))
fi
INFLIGHT=20          # = max_inflight_messages below: mosquitto drops QoS 2 beyond it (see LoadGenConfig.inflight)
RUN_TIMEOUT=90       # hard limit per bench invocation, seconds

# --- limits shared by both brokers -------------------------------------------------------------------------
common_conf() {  # $1 = port
  cat <<CONF
listener $1 127.0.0.1
allow_anonymous true
max_inflight_messages $INFLIGHT
max_queued_messages 100000
sys_interval 0
log_dest stdout
CONF
}

# --- build ------------------------------------------------------------------------------------------------
# mqttchat from the main package; NIOFloorServer from the Benchmarks package, built the same way.
RELEASE_FLAGS=(-c release --static-swift-stdlib --scratch-path "$ROOT/.build-release")
BENCH_FLAGS=(--package-path "$ROOT/Benchmarks" -c release --static-swift-stdlib --scratch-path "$ROOT/.build-bench-release")
if [ -n "${MQTTCHAT_BIN:-}" ]; then
  BIN="$MQTTCHAT_BIN"
else
  BIN="$ROOT/.build-release/release/mqttchat"
  if [ "$BUILD" = 1 ]; then
    echo "bench-broker: building mqttchat (release, static Swift runtime, scratch path .build-release)..." >&2
    (cd "$ROOT" && timeout 1500 swift build "${RELEASE_FLAGS[@]}" --product mqttchat) >&2
  fi
fi
[ -x "$BIN" ] || { echo "bench-broker: $BIN not found" >&2; exit 1; }
FLOOR_BIN="$ROOT/.build-bench-release/release/NIOFloorServer"
if [ "$BUILD" = 1 ]; then
  echo "bench-broker: building NIOFloorServer (Benchmarks package, release, scratch path .build-bench-release)..." >&2
  (cd "$ROOT" && timeout 900 swift build "${BENCH_FLAGS[@]}" --product NIOFloorServer) >&2 \
    || echo "bench-broker: NIOFloorServer did not build: no floor figure" >&2
fi

TMP="$(mktemp -d /tmp/bench-broker.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$KEEP" = 1 ]; then echo "bench-broker: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port, wait_port
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# --- CPU pinning --------------------------------------------------------------------------------------------
CORES="$(nproc 2>/dev/null || echo 1)"
BROKER_PIN=()
LOAD_PIN=()
if [ "$PIN" = 0 ]; then
  PINNING="unpinned (--unpinned): brokers and load generator free on all $CORES cores"
elif command -v taskset >/dev/null 2>&1 && [ "$CORES" -ge 2 ]; then
  BROKER_PIN=(taskset -c 0)
  LOAD_PIN=(taskset -c 1)
  PINNING="pinned with taskset: brokers on core 0, load generator on core 1 ($CORES cores)"
else
  PINNING="not pinned (taskset missing or fewer than 2 cores)"
fi

# --- brokers ------------------------------------------------------------------------------------------------
OURS_PORT=""; OURS_PID=""
start_ours() {
  "$BIN" broker --help >/dev/null 2>&1 || { echo "bench-broker: '$BIN broker' not available: ours = n/a" >&2; return 1; }
  local port; port="$(free_port)"
  common_conf "$port" > "$TMP/ours.conf"
  if [ -n "$EXTRA_CONF" ]; then printf '%s\n' "$EXTRA_CONF" >> "$TMP/ours.conf"; fi
  "${BROKER_PIN[@]}" "$BIN" broker -c "$TMP/ours.conf" > "$TMP/ours.log" 2>&1 &
  OURS_PID=$!
  PIDS+=("$OURS_PID")
  for _ in $(seq 1 100); do
    if grep -q "mqttchat broker listening on 127.0.0.1:" "$TMP/ours.log" 2>/dev/null; then
      OURS_PORT="$(grep -o "listening on 127.0.0.1:[0-9]*" "$TMP/ours.log" | head -1 | sed 's/.*://')"
      wait_port "$OURS_PORT" "$OURS_PID" && return 0
    fi
    kill -0 "$OURS_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench-broker: our broker did not start (log: $(tail -3 "$TMP/ours.log" | tr '\n' ' ')): ours = n/a" >&2
  return 1
}

MOSQ_PORT=""; MOSQ_PID=""
start_mosquitto() {
  local binary; binary="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
  [ -x "$binary" ] || { echo "bench-broker: mosquitto not found" >&2; return 1; }
  MOSQ_PORT="$(free_port)"
  { common_conf "$MOSQ_PORT"; echo "set_tcp_nodelay true"; } > "$TMP/mosquitto.conf"
  "${BROKER_PIN[@]}" "$binary" -c "$TMP/mosquitto.conf" > "$TMP/mosquitto.log" 2>&1 &
  MOSQ_PID=$!
  PIDS+=("$MOSQ_PID")
  wait_port "$MOSQ_PORT" "$MOSQ_PID" || { echo "bench-broker: mosquitto did not start" >&2; return 1; }
}

OURS_OK=0; MOSQ_OK=0
start_ours && OURS_OK=1 || true
start_mosquitto && MOSQ_OK=1 || true
[ "$OURS_OK" = 1 ] || [ "$MOSQ_OK" = 1 ] || { echo "bench-broker: no broker could be started" >&2; exit 1; }
if [ -n "$EXTRA_CONF" ]; then
  EXTRA_CONF_NOTE="Extra config for ours only (MQTTCHAT_EXTRA_CONF): $(printf '%s' "$EXTRA_CONF" | paste -sd ';' - | sed 's/;/; /g')"
else
  EXTRA_CONF_NOTE="No extra config for ours (MQTTCHAT_EXTRA_CONF unset)"
fi

# --- runs ---------------------------------------------------------------------------------------------------
RUNS=()
for qos in 0 1 2; do
  RUNS+=("fanout-q$qos|--scenario fanout --publishers 1 --subscribers 10 --qos $qos --duration $DURATION")
  RUNS+=("pairs-q$qos|--scenario pairs --publishers 10 --subscribers 10 --qos $qos --duration $DURATION")
  RUNS+=("fanin-q$qos|--scenario fanin --publishers 10 --subscribers 1 --qos $qos --duration $DURATION")
done
RUNS+=("latency-5k|--scenario pairs --publishers 10 --subscribers 10 --qos 1 --rate 5000 --duration $LATENCY_DURATION")
RUNS+=("latency-5k-burst|--scenario pairs --publishers 10 --subscribers 10 --qos 1 --rate 5000 --pacing aligned --duration $LATENCY_DURATION")

RESULTS="$TMP/results.tsv"
: > "$RESULTS"
run_one() {  # $1 = broker name, $2 = port, $3 = pid, $4 = run name, $5 = args
  # With the broker's pid the generator reads its memory (idle) or its CPU time and system calls (the others).
  local extra="--broker-pid $3"
  local out
  # shellcheck disable=SC2086
  if out="$(timeout "$RUN_TIMEOUT" "${LOAD_PIN[@]}" "$BIN" bench --port "$2" --inflight "$INFLIGHT" $PROTOCOL_ARGS $5 $extra \
      --timeout 30 --drain 3 --json 2>"$TMP/bench-stderr.txt")"; then
    printf '%s\t%s\t%s\n' "$4" "$1" "$(echo "$out" | tail -1)" >> "$RESULTS"
    echo "  $1: $(echo "$out" | head -1)" >&2
  else
    printf '%s\t%s\t%s\n' "$4" "$1" "FAILED" >> "$RESULTS"
    echo "  $1: FAILED ($(tail -2 "$TMP/bench-stderr.txt" | tr '\n' ' '))" >&2
  fi
}

# Both brokers share core 0, so a broker still working off the previous run would take the core from the next one:
# mosquitto keeps reading a fan-in's unread backlog for seconds after its clients have closed (about 3 s after
# fan-in QoS 0), which halved our next run. Before every run, wait until both have been idle for 0.4 s.
cpu_ticks() {  # $1 = pid: utime + stime in clock ticks (the fields after the command name, which ends with ") ")
  sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}
wait_quiet() {  # $@ = pids; bounded: at most 30 s
  local quiet=0 before after pid waited=0
  for _ in $(seq 1 150); do
    before=0; after=0
    for pid in "$@"; do before=$((before + $(cpu_ticks "$pid" || echo 0))); done
    sleep 0.2
    for pid in "$@"; do after=$((after + $(cpu_ticks "$pid" || echo 0))); done
    if [ $((after - before)) -le 1 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    [ "$quiet" -ge 2 ] && { [ "$waited" -gt 2 ] && echo "  (waited $((waited * 2 / 10)).$((waited * 2 % 10)) s for the brokers to go idle)" >&2; return 0; }
    waited=$((waited + 1))
  done
  echo "  (the brokers were still busy after 30 s; running anyway)" >&2
}
BUSY_PIDS=()
[ "$OURS_OK" = 1 ] && BUSY_PIDS+=("$OURS_PID")
[ "$MOSQ_OK" = 1 ] && BUSY_PIDS+=("$MOSQ_PID")

echo "bench-broker: $PINNING" >&2
echo "bench-broker: protocol $PROTOCOL_NOTE for both brokers ($PROTOCOL_ARGS)" >&2
echo "bench-broker: $EXTRA_CONF_NOTE" >&2
for rep in $(seq 1 "$REPEAT"); do
  for entry in "${RUNS[@]}"; do
    name="${entry%%|*}"; args="${entry#*|}"
    runs=1
    case "$name" in latency*) runs="$LATENCY_RUNS" ;; esac
    for run in $(seq 1 "$runs"); do
      echo "[rep $rep/$REPEAT] $name$([ "$runs" -gt 1 ] && echo " ($run/$runs)")" >&2
      # Alternate which broker goes first from one pair of runs to the next.
      if [ $(((rep + run) % 2)) = 0 ]; then order="ours mosquitto"; else order="mosquitto ours"; fi
      for broker in $order; do
        wait_quiet "${BUSY_PIDS[@]}"
        if [ "$broker" = ours ] && [ "$OURS_OK" = 1 ]; then
          run_one ours "$OURS_PORT" "$OURS_PID" "$name" "$args"
        elif [ "$broker" = mosquitto ] && [ "$MOSQ_OK" = 1 ]; then
          run_one mosquitto "$MOSQ_PORT" "$MOSQ_PID" "$name" "$args"
        fi
      done
    done
  done
done

# --- idle connections, on freshly started brokers --------------------------------------------------------------
# After the throughput runs a broker's heap holds freed memory that new connections reuse, which would hide their
# cost; so each idle run gets a new broker process, and the memory is its VmRSS growth while the connections open.
stop_pid() {  # $1 = pid; SIGTERM, then SIGKILL after 5 s
  kill "$1" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
}
[ "$OURS_OK" = 1 ] && stop_pid "$OURS_PID"
[ "$MOSQ_OK" = 1 ] && stop_pid "$MOSQ_PID"
IDLE_ARGS="--scenario idle --connections $IDLE_CONNECTIONS"
for rep in $(seq 1 "$REPEAT"); do
  echo "[rep $rep/$REPEAT] idle ($IDLE_CONNECTIONS connections, fresh brokers)" >&2
  if [ "$OURS_OK" = 1 ] && start_ours; then
    run_one ours "$OURS_PORT" "$OURS_PID" idle "$IDLE_ARGS"
    stop_pid "$OURS_PID"
  fi
  if [ "$MOSQ_OK" = 1 ] && start_mosquitto; then
    run_one mosquitto "$MOSQ_PORT" "$MOSQ_PID" idle "$IDLE_ARGS"
    stop_pid "$MOSQ_PID"
  fi
  if [ -x "$FLOOR_BIN" ]; then
    FLOOR_PORT="$(free_port)"
    "${BROKER_PIN[@]}" "$FLOOR_BIN" "$FLOOR_PORT" > "$TMP/floor.log" 2>&1 &
    FLOOR_PID=$!
    PIDS+=("$FLOOR_PID")
    if wait_port "$FLOOR_PORT" "$FLOOR_PID"; then
      run_one nio-floor "$FLOOR_PORT" "$FLOOR_PID" idle "$IDLE_ARGS"
    fi
    stop_pid "$FLOOR_PID"
  fi
done

# --- summary ------------------------------------------------------------------------------------------------
echo
echo "Broker comparison: medians of $REPEAT repetition(s) (latency: $((REPEAT * LATENCY_RUNS)) alternating pairs);"
echo "$PINNING."
echo "$EXTRA_CONF_NOTE."
echo "Protocol: $PROTOCOL_NOTE for both brokers (bench $PROTOCOL_ARGS)."
echo "Limits for both: max_inflight_messages $INFLIGHT, max_queued_messages 100000 (mosquitto also set_tcp_nodelay true)."
echo "Every run starts once both brokers have been idle for 0.4 s (at most 30 s of waiting)."
echo "Idle: $IDLE_CONNECTIONS connections per run, each run on a freshly started broker."
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
from collections import OrderedDict

rows = OrderedDict()
for line in open(sys.argv[1]):
    name, broker, payload = line.rstrip("\n").split("\t", 2)
    rows.setdefault(name, {"ours": [], "mosquitto": [], "nio-floor": []})
    rows[name][broker].append(None if payload == "FAILED" else json.loads(payload))

def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def metric(name, results):
    ok = [r for r in results if r is not None]
    if not ok:
        return None
    if name == "idle":
        return {
            "value": median([r["idle"]["connectsPerSecond"] for r in ok]),
            "extra": median([r["idle"].get("brokerBytesPerConnection") for r in ok]),
            "lost": 0, "dup": 0, "n": len(ok), "failed": len(results) - len(ok),
        }
    value = median([r["deliveredPerSecond"] for r in ok])
    extra = None
    if name.startswith("latency"):
        lat = [r["latency"] for r in ok if r.get("latency")]
        value = median([l["p50Micros"] for l in lat])
        extra = median([l["p99Micros"] for l in lat])
    usage = [r.get("brokerUsage") or {} for r in ok]
    generator = [r.get("generatorUsage") or {} for r in ok]
    return {
        "value": value, "extra": extra,
        "cpu": median([u.get("cpuMicrosPerDelivery") for u in usage]),
        "busy": median([u.get("busyFraction") for u in usage]),
        "calls": median([u.get("syscallsPerDelivery") for u in usage]),
        "generator": median([g.get("busyFraction") for g in generator]),
        "lost": sum(r["lost"] for r in ok), "dup": sum(r["duplicates"] for r in ok),
        "n": len(ok), "failed": len(results) - len(ok),
    }

def per_repetition(name, by):
    """ours / mosquitto in each repetition (the runs alternate, so repetition i of each ran side by side): the
    spread a median hides. Throughput, or p99 for the latency runs; None with fewer than two repetitions."""
    if len(by["ours"]) < 2:
        return None
    def figure(result):
        if result is None:
            return None
        if name.startswith("latency"):
            return (result.get("latency") or {}).get("p99Micros")
        return result["deliveredPerSecond"]
    ratios = []
    for ours, mosquitto in zip(by["ours"], by["mosquitto"]):
        a, b = figure(ours), figure(mosquitto)
        ratios.append(f"{a / b:.2f}" if a is not None and b else "n/a")
    return ratios

def fmt(v, unit="", decimals=0):
    if v is None:
        return "n/a"
    return f"{v:,.{decimals}f}{unit}"

header = f"{'run':<16} {'metric':<22} {'ours':>14} {'mosquitto':>14} {'ratio':>7}  {'lost o/m':>12} {'dup o/m':>9}"
print(header)
print("-" * len(header))
for name, by in rows.items():
    o, m = metric(name, by["ours"]), metric(name, by["mosquitto"])
    if name == "idle":
        label, extra_label = "connects/s", "broker bytes/conn"
    elif name.startswith("latency"):
        label, extra_label = "latency p50 us", "latency p99 us"
    else:
        label, extra_label = "delivered msg/s", None
    def val(x, key):
        return x[key] if x else None
    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "n/a"
    def counts(key):
        a = "n/a" if o is None else str(o[key])
        b = "n/a" if m is None else str(m[key])
        return f"{a}/{b}"
    failed = ""
    for who, x in (("ours", o), ("mosquitto", m)):
        if x and x["failed"]:
            failed += f"  ({who}: {x['failed']} failed)"
    print(f"{name:<16} {label:<22} {fmt(val(o,'value')):>14} {fmt(val(m,'value')):>14} "
          f"{ratio(val(o,'value'), val(m,'value')):>7}  {counts('lost'):>12} {counts('dup'):>9}{failed}")
    if extra_label:
        print(f"{'':<16} {extra_label:<22} {fmt(val(o,'extra')):>14} {fmt(val(m,'extra')):>14} "
              f"{ratio(val(o,'extra'), val(m,'extra')):>7}")
    repetitions = per_repetition(name, by) if name != "idle" else None
    if repetitions:
        repetition_label = "p99 ratio per pair" if name.startswith("latency") else "ratio per repetition"
        print(f"{'':<16} {repetition_label:<22} " + " ".join(f"{r:>6}" for r in repetitions))
        if name.startswith("latency"):
            lower = sum(1 for r in repetitions if r != "n/a" and float(r) < 1)
            print(f"{'':<16} {'':<22} ours lower in {lower} of {len(repetitions)} pairs")
    if name != "idle" and (val(o, "cpu") is not None or val(m, "cpu") is not None):
        def percents(key):
            return "/".join("n/a" if val(x, key) is None else f"{val(x, key) * 100:.0f}%" for x in (o, m))
        print(f"{'':<16} {'broker CPU us/msg':<22} {fmt(val(o,'cpu'), decimals=2):>14} {fmt(val(m,'cpu'), decimals=2):>14} "
              f"{ratio(val(o,'cpu'), val(m,'cpu')):>7}  busy {percents('busy')}, generator {percents('generator')}")
        print(f"{'':<16} {'read+write calls/msg':<22} {fmt(val(o,'calls'), decimals=3):>14} "
              f"{fmt(val(m,'calls'), decimals=3):>14} {ratio(val(o,'calls'), val(m,'calls')):>7}")
floor = metric("idle", rows["idle"]["nio-floor"]) if "idle" in rows else None
if floor and floor["extra"] is not None:
    print(f"{'idle floor':<16} {'NIO bytes/conn':<22} {fmt(floor['extra']):>14}   (NIOFloorServer: one NIO channel per "
          "connection and no MQTT state)")
print()
print("ratio = ours / mosquitto (throughput and connects/s: higher is better; latency, memory, CPU and calls: lower")
print("is better). Broker CPU and read/write system calls are per delivered message, from /proc/PID/stat and")
print("/proc/PID/io between the start of publishing and the end of the drain; busy = CPU time / wall time of the")
print("broker, and of the load generator (one core): a broker below 100% busy waits on round trips or on the generator.")
print("lost/dup are totals over all repetitions; QoS 0 loss under overload is allowed by MQTT.")
PY
