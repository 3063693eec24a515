# Shared by scripts/ejabberd-peer.sh (one node) and scripts/cluster.sh (three clustered nodes): sourced, not run.
# Callers set LOG_PREFIX (the name their messages start with) and may set UP_TIMEOUT / DOWN_TIMEOUT.
#
# Every node is started by hand with `erl … -s ejabberd`, not with ejabberdctl (which switches user and may run
# `epmd -kill`, taking down other nodes' epmd): a node name, cookie, config and Mnesia directory of its own,
# distribution and epmd bound to 127.0.0.1, and no scheduler busy-waiting (`+sbwt none …`), so an idle node leaves
# the shared CPUs alone. Processes are recorded in pid files and stopped only if the pid still runs the command line
# recorded (never by name).

EJABBERD_LIBS=/usr/lib/x86_64-linux-gnu
UP_TIMEOUT=${UP_TIMEOUT:-${EJABBERD_UP_TIMEOUT:-60}}
DOWN_TIMEOUT=${DOWN_TIMEOUT:-10}
LOG_PREFIX=${LOG_PREFIX:-ejabberd}

log() { echo "$LOG_PREFIX: $*" >&2; }

ejabberd_installed() {
  command -v erl >/dev/null && compgen -G "$EJABBERD_LIBS/ejabberd-*/ebin/mod_mqtt.beam" >/dev/null
}

# Exits 3 when ejabberd is missing; otherwise creates $dir and makes it absolute (the caller's global).
require_ejabberd_and_dir() {
  if ! ejabberd_installed; then
    log "ejabberd is not installed (scripts/setup.sh installs it)"
    exit 3
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
}

# Whether pid file $1 names a live process whose command line contains $2.
alive() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2"
}

# Sends TERM to the process in pid file $1 (if it is still the one recorded, matched by $2), waits up to
# DOWN_TIMEOUT seconds, then KILL.
stop_recorded() {
  local file=$1 match=$2 pid waited=0
  if alive "$file" "$match"; then
    pid=$(cat "$file")
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$file" "$match" && [ $waited -lt $((DOWN_TIMEOUT * 10)) ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if alive "$file" "$match"; then
      log "pid $pid did not stop within ${DOWN_TIMEOUT} s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$file"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

listening() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.settimeout(0.5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

random_hex() { od -An -N"$1" -tx"$1" /dev/urandom | tr -d ' '; }

# write_config FILE MQTT_PORT HTTP_PORT: one node, MQTT only (TCP, and WebSockets at /mqtt on the HTTP listener),
# loopback only, anonymous. EJABBERD_MQTT_MAX_QUEUE sets mod_mqtt's `max_queue`.
write_config() {
  local file=$1 mqtt_port=$2 http_port=$3
  cat >"$file" <<EOF
# Written by scripts/ejabberd-common.sh: one node, MQTT only, loopback only, anonymous.
hosts:
  - localhost
loglevel: info
log_rotate_count: 0
acme:
  auto: false
auth_method: [anonymous]
anonymous_protocol: login_anon
allow_multiple_connections: true
listen:
  -
    port: $mqtt_port
    ip: "127.0.0.1"
    module: mod_mqtt
    backlog: 1024
  -
    port: $http_port
    ip: "127.0.0.1"
    module: ejabberd_http
    request_handlers:
      /mqtt: mod_mqtt
shaper: {}
shaper_rules: {}
modules:
  mod_mqtt:
$(if [ -n "${EJABBERD_MQTT_MAX_QUEUE:-}" ]; then echo "    max_queue: $EJABBERD_MQTT_MAX_QUEUE"; else echo "    {}"; fi)
EOF
}

# start_epmd PIDFILE LOGFILE PORT: an epmd of our own on 127.0.0.1, in the foreground of its own process so that its
# pid is ours to stop.
start_epmd() {
  ERL_EPMD_ADDRESS=127.0.0.1 setsid epmd -port "$3" >"$2" 2>&1 </dev/null &
  echo $! >"$1"
}

# start_node DIR NODE COOKIE EPMD_PORT: starts `erl -sname NODE … -s ejabberd` with DIR/ejabberd.yml, Mnesia in
# DIR/mnesia (wiped first), logs and output in DIR, and its pid in DIR/beam.pid.
start_node() {
  local ndir=$1 node=$2 cookie=$3 epmd_port=$4
  rm -rf "$ndir/mnesia"
  mkdir -p "$ndir/mnesia"
  # erl execs erlexec, which execs beam.smp: $! is the VM's pid.
  (
    cd "$ndir"
    export ERL_EPMD_PORT=$epmd_port ERL_LIBS=$EJABBERD_LIBS
    export EJABBERD_CONFIG_PATH="$ndir/ejabberd.yml" EJABBERD_LOG_PATH="$ndir/ejabberd.log"
    export ERL_CRASH_DUMP="$ndir/erl_crash.dump" ERL_CRASH_DUMP_BYTES=0
    exec setsid erl -sname "$node" -setcookie "$cookie" -noinput -start_epmd false \
      -kernel inet_dist_use_interface '{127,0,0,1}' \
      +sbwt none +sbwtdcpu none +sbwtdio none +K true \
      -mnesia dir "\"$ndir/mnesia\"" -s ejabberd >"$ndir/erl.out" 2>&1 </dev/null
  ) &
  echo $! >"$ndir/beam.pid"
}

# wait_listening DIR NODE PORT...: waits (up to UP_TIMEOUT s) until the node started in DIR listens on every PORT.
# Fails, after showing the node's log, if the node exits first or the time runs out.
wait_listening() {
  local ndir=$1 node=$2 waited=0 port
  shift 2
  for port in "$@"; do
    until listening "$port"; do
      if ! alive "$ndir/beam.pid" "-sname $node"; then
        log "the node $node exited while starting; its output and log:"
        tail -n 30 "$ndir/erl.out" "$ndir/ejabberd.log" >&2 2>/dev/null || true
        return 1
      fi
      if [ $waited -ge $((UP_TIMEOUT * 5)) ]; then
        log "the node $node did not listen on $* within ${UP_TIMEOUT} s; its log:"
        tail -n 30 "$ndir/ejabberd.log" >&2 2>/dev/null || true
        return 1
      fi
      sleep 0.2
      waited=$((waited + 1))
    done
  done
}
