#!/usr/bin/env bash
# A real peer broker with a WebSocket listener, for tests and benchmarks: one ejabberd node (Debian's `ejabberd`
# package, whose mod_mqtt speaks MQTT 3.1.1/5) on loopback ports of its own. Debian 12's mosquitto 2.0.11 cannot
# open a WebSocket listener on this machine, so ejabberd stands in for it.
#
#   scripts/ejabberd-peer.sh up DIR     start the node (idempotent: a node already running in DIR is reused)
#   scripts/ejabberd-peer.sh down DIR   stop the node and its epmd (idempotent)
#
# Ports (all on 127.0.0.1), from the environment or free ones picked here:
#   EJABBERD_MQTT_PORT  MQTT over TCP (mod_mqtt listener)
#   EJABBERD_HTTP_PORT  HTTP listener whose request handler `/mqtt: mod_mqtt` serves MQTT over WebSockets
#   EJABBERD_EPMD_PORT  the node's own epmd (never the default 4369, which another node on the machine may use)
# EJABBERD_MQTT_MAX_QUEUE sets mod_mqtt's `max_queue` (default: ejabberd's own, 5000): a session whose queue of
# outgoing messages grows beyond it is closed ("Message queue is overloaded"), since mod_mqtt does not slow
# publishers down; benchmarks that publish as fast as they can set it to `unlimited`.
# `up` prints `mqtt_port=`, `ws_port=`, `ws_path=`, `epmd_port=`, `node=` and `pid=` lines on stdout.
#
# Started by hand with `erl … -s ejabberd`, not with ejabberdctl (which switches user and may run `epmd -kill`,
# taking down other nodes' epmd): a node name, cookie, config and Mnesia directory of its own, distribution and epmd
# bound to 127.0.0.1, and no scheduler busy-waiting (`+sbwt none …`), so an idle peer leaves the shared CPUs alone.
# Anonymous login (`login_anon`) still needs a non-empty user name and password in CONNECT.
# `down` stops exactly the processes `up` recorded in DIR (checked against their command lines), nothing by name.
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$2

EJABBERD_LIBS=/usr/lib/x86_64-linux-gnu
UP_TIMEOUT=${EJABBERD_UP_TIMEOUT:-60}
DOWN_TIMEOUT=10

log() { echo "ejabberd-peer: $*" >&2; }

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

print_ports() {
  cat "$dir/ports"
  echo "pid=$(cat "$dir/beam.pid")"
}

down() {
  [ -d "$dir" ] || return 0
  local node=""
  [ -f "$dir/node" ] && node=$(cat "$dir/node")
  # SIGTERM makes the Erlang VM run init:stop(): ejabberd closes its listeners and Mnesia cleanly.
  stop_recorded "$dir/beam.pid" "-sname $node"
  stop_recorded "$dir/epmd.pid" "epmd"
  log "stopped the node in $dir"
}

up() {
  if ! command -v erl >/dev/null || ! compgen -G "$EJABBERD_LIBS/ejabberd-*/ebin/mod_mqtt.beam" >/dev/null; then
    log "ejabberd is not installed (scripts/setup.sh installs it)"
    exit 3
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/node" ] && alive "$dir/beam.pid" "-sname $(cat "$dir/node")"; then
    log "a node is already running in $dir; reusing it"
    print_ports
    return 0
  fi
  # Leftovers of a node that died: stop its epmd too, then start afresh.
  down 2>/dev/null || true

  local mqtt_port=${EJABBERD_MQTT_PORT:-$(free_port)}
  local http_port=${EJABBERD_HTTP_PORT:-$(free_port)}
  local epmd_port=${EJABBERD_EPMD_PORT:-$(free_port)}
  local tag node cookie
  tag=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
  node="mqttpeer$tag@localhost"
  cookie="peer$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  rm -rf "$dir/mnesia"
  mkdir -p "$dir/mnesia"

  cat >"$dir/ejabberd.yml" <<EOF
# Written by scripts/ejabberd-peer.sh: one node, MQTT only, loopback only, anonymous.
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
  printf 'mqtt_port=%s\nws_port=%s\nws_path=/mqtt\nepmd_port=%s\nnode=%s\n' \
    "$mqtt_port" "$http_port" "$epmd_port" "$node" >"$dir/ports"
  echo "$node" >"$dir/node"

  # An epmd of our own, in the foreground of its own process so that its pid is ours to stop.
  ERL_EPMD_ADDRESS=127.0.0.1 setsid epmd -port "$epmd_port" >"$dir/epmd.log" 2>&1 </dev/null &
  echo $! >"$dir/epmd.pid"

  # erl execs erlexec, which execs beam.smp: $! is the VM's pid.
  (
    cd "$dir"
    export ERL_EPMD_PORT=$epmd_port ERL_LIBS=$EJABBERD_LIBS
    export EJABBERD_CONFIG_PATH="$dir/ejabberd.yml" EJABBERD_LOG_PATH="$dir/ejabberd.log"
    export ERL_CRASH_DUMP="$dir/erl_crash.dump" ERL_CRASH_DUMP_BYTES=0
    exec setsid erl -sname "$node" -setcookie "$cookie" -noinput -start_epmd false \
      -kernel inet_dist_use_interface '{127,0,0,1}' \
      +sbwt none +sbwtdcpu none +sbwtdio none +K true \
      -mnesia dir "\"$dir/mnesia\"" -s ejabberd >"$dir/erl.out" 2>&1 </dev/null
  ) &
  echo $! >"$dir/beam.pid"

  local waited=0 started=$SECONDS
  until listening "$mqtt_port" && listening "$http_port"; do
    if ! alive "$dir/beam.pid" "-sname $node"; then
      log "the node exited while starting; its output and log:"
      tail -n 30 "$dir/erl.out" "$dir/ejabberd.log" >&2 2>/dev/null || true
      down 2>/dev/null || true
      exit 1
    fi
    if [ $waited -ge $((UP_TIMEOUT * 5)) ]; then
      log "the node did not listen on $mqtt_port and $http_port within ${UP_TIMEOUT} s; its log:"
      tail -n 30 "$dir/ejabberd.log" >&2 2>/dev/null || true
      down 2>/dev/null || true
      exit 1
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  log "node $node up in $dir after about $((SECONDS - started)) s"
  print_ports
}

case $action in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
