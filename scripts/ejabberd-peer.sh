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

LOG_PREFIX=ejabberd-peer
# shellcheck source=scripts/ejabberd-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/ejabberd-common.sh"

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
  require_ejabberd_and_dir
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
  local tag node cookie started=$SECONDS
  tag=$(random_hex 4)
  node="mqttpeer$tag@localhost"
  cookie="peer$(random_hex 8)"

  write_config "$dir/ejabberd.yml" "$mqtt_port" "$http_port"
  printf 'mqtt_port=%s\nws_port=%s\nws_path=/mqtt\nepmd_port=%s\nnode=%s\n' \
    "$mqtt_port" "$http_port" "$epmd_port" "$node" >"$dir/ports"
  echo "$node" >"$dir/node"

  start_epmd "$dir/epmd.pid" "$dir/epmd.log" "$epmd_port"
  start_node "$dir" "$node" "$cookie" "$epmd_port"
  if ! wait_listening "$dir" "$node" "$mqtt_port" "$http_port"; then
    down 2>/dev/null || true
    exit 1
  fi
  log "node $node up in $dir after about $((SECONDS - started)) s"
  print_ports
}

case $action in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
