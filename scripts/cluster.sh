#!/usr/bin/env bash
# A real 3-node MQTT cluster for tests: three ejabberd 23.01 nodes (Debian's `ejabberd` package, mod_mqtt) clustered
# through Mnesia, on loopback ports of their own.
#
#   scripts/cluster.sh up DIR     start the cluster (idempotent: a cluster already running in DIR is reused)
#   scripts/cluster.sh down DIR   stop the three nodes and the cluster's epmd (idempotent)
#
# `up` prints on stdout, for N in 1 2 3: `nodeN_mqtt_port=` (MQTT over TCP), `nodeN_ws_port=` (MQTT over WebSockets
# at /mqtt), `nodeN_node=` and `nodeN_pid=` (the node's VM, for tests that kill a node), then `epmd_port=`.
# EJABBERD_CLUSTER_EPMD_PORT picks the epmd port (default: a free one).
#
# How: one epmd for the cluster on 127.0.0.1 and a port of its own (never the default 4369); nodes
# `ej1<tag>@localhost` … `ej3<tag>@localhost` sharing a random cookie, distribution bound to 127.0.0.1 and
# `inet_dist_listen_min/max` left to the kernel's free ports; each started like scripts/ejabberd-peer.sh's node
# (scripts/ejabberd-common.sh). Once all three listen, a hidden control node runs `ejabberd_admin:join_cluster(node 1)`
# on nodes 2 and 3 over RPC (the node restarts ejabberd on the joined Mnesia), then waits until node 1's
# `mnesia:system_info(running_db_nodes)` and `ejabberd_cluster:get_nodes()` hold all three.
#
# What crosses nodes (mod_mqtt's sessions are cluster-wide): QoS 0/1/2 messages, wills, persistent sessions and
# session takeover. Retained messages do not: each node keeps its own retained index.
# `down` stops exactly the processes `up` recorded in DIR (checked against their command lines), nothing by name.
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$2

LOG_PREFIX=cluster
# shellcheck source=scripts/ejabberd-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/ejabberd-common.sh"
JOIN_TIMEOUT=${EJABBERD_JOIN_TIMEOUT:-60}
NODES=(1 2 3)

node_name() { cat "$dir/node$1/node" 2>/dev/null || true; }

all_alive() {
  local n
  for n in "${NODES[@]}"; do
    [ -f "$dir/node$n/node" ] && alive "$dir/node$n/beam.pid" "-sname $(node_name "$n")" || return 1
  done
  [ -f "$dir/joined" ]
}

print_ports() {
  local n
  for n in "${NODES[@]}"; do
    cat "$dir/node$n/ports"
    echo "node${n}_pid=$(cat "$dir/node$n/beam.pid")"
  done
  echo "epmd_port=$(cat "$dir/epmd_port")"
}

down() {
  [ -d "$dir" ] || return 0
  local n
  rm -f "$dir/joined"
  # SIGTERM makes each VM run init:stop(); signal all three first so that they stop together.
  for n in "${NODES[@]}"; do
    if alive "$dir/node$n/beam.pid" "-sname $(node_name "$n")"; then
      kill -TERM "$(cat "$dir/node$n/beam.pid")" 2>/dev/null || true
    fi
  done
  for n in "${NODES[@]}"; do
    [ -d "$dir/node$n" ] && stop_recorded "$dir/node$n/beam.pid" "-sname $(node_name "$n")"
  done
  stop_recorded "$dir/epmd.pid" "epmd"
  log "stopped the cluster in $dir"
}

# Runs Erlang expressions ($1) on a hidden, short-lived control node of the cluster; its output on stdout.
control() {
  ERL_EPMD_PORT=$(cat "$dir/epmd_port") ERL_CRASH_DUMP="$dir/control_crash.dump" ERL_CRASH_DUMP_BYTES=0 \
    timeout $((JOIN_TIMEOUT + 30)) \
    erl -sname "ctl$(random_hex 4)@localhost" -setcookie "$(cat "$dir/cookie")" -hidden -noinput \
    -start_epmd false -kernel inet_dist_use_interface '{127,0,0,1}' +sbwt none +sbwtdcpu none +sbwtdio none \
    -eval "$1" </dev/null
}

join() {
  local n1 n2 n3
  n1=$(node_name 1) n2=$(node_name 2) n3=$(node_name 3)
  control "
    N1 = '$n1', All = lists:sort(['$n1', '$n2', '$n3']),
    Deadline = erlang:monotonic_time(millisecond) + $JOIN_TIMEOUT * 1000,
    Join = fun(N) ->
      R = rpc:call(N, ejabberd_admin, join_cluster, [atom_to_binary(N1)], $JOIN_TIMEOUT * 1000),
      io:format(standard_error, \"cluster: ~s join_cluster(~s): ~p~n\", [N, N1, R]) end,
    Join('$n2'), Join('$n3'),
    Converged = fun() ->
      Db = rpc:call(N1, mnesia, system_info, [running_db_nodes]),
      Ej = rpc:call(N1, ejabberd_cluster, get_nodes, []),
      is_list(Db) andalso is_list(Ej) andalso lists:sort(Db) =:= All andalso lists:sort(Ej) =:= All end,
    Wait = fun Wait() ->
      case Converged() of
        true -> io:format(\"joined~n\"), halt(0);
        false ->
          case erlang:monotonic_time(millisecond) > Deadline of
            true ->
              io:format(standard_error, \"cluster: not converged: running_db_nodes ~p, get_nodes ~p~n\",
                [rpc:call(N1, mnesia, system_info, [running_db_nodes]), rpc:call(N1, ejabberd_cluster, get_nodes, [])]),
              halt(1);
            false -> timer:sleep(200), Wait()
          end
      end end,
    Wait()."
}

up() {
  require_ejabberd_and_dir
  if all_alive; then
    log "a cluster is already running in $dir; reusing it"
    print_ports
    return 0
  fi
  # Leftovers of a cluster that died or never finished joining: stop what is left, then start afresh.
  down 2>/dev/null || true

  local started=$SECONDS tag cookie epmd_port n node mqtt_port http_port
  tag=$(random_hex 4)
  cookie="cluster$(random_hex 8)"
  epmd_port=${EJABBERD_CLUSTER_EPMD_PORT:-$(free_port)}
  (umask 077 && echo "$cookie" >"$dir/cookie")
  echo "$epmd_port" >"$dir/epmd_port"
  start_epmd "$dir/epmd.pid" "$dir/epmd.log" "$epmd_port"

  for n in "${NODES[@]}"; do
    mkdir -p "$dir/node$n"
    node="ej$n$tag@localhost"
    mqtt_port=$(free_port)
    http_port=$(free_port)
    write_config "$dir/node$n/ejabberd.yml" "$mqtt_port" "$http_port"
    echo "$node" >"$dir/node$n/node"
    printf 'node%s_mqtt_port=%s\nnode%s_ws_port=%s\nnode%s_node=%s\n' \
      "$n" "$mqtt_port" "$n" "$http_port" "$n" "$node" >"$dir/node$n/ports"
    echo "$mqtt_port $http_port" >"$dir/node$n/listen"
    start_node "$dir/node$n" "$node" "$cookie" "$epmd_port"
  done
  for n in "${NODES[@]}"; do
    # shellcheck disable=SC2046
    if ! wait_listening "$dir/node$n" "$(node_name "$n")" $(cat "$dir/node$n/listen"); then
      down 2>/dev/null || true
      exit 1
    fi
  done
  log "3 nodes listening after about $((SECONDS - started)) s; joining nodes 2 and 3 to node 1"

  if ! join >"$dir/join.out" 2>"$dir/join.err" || ! grep -qx joined "$dir/join.out"; then
    log "the nodes did not form a cluster:"
    cat "$dir/join.err" "$dir/join.out" >&2
    for n in "${NODES[@]}"; do tail -n 15 "$dir/node$n/ejabberd.log" >&2 2>/dev/null || true; done
    down 2>/dev/null || true
    exit 1
  fi
  cat "$dir/join.err" >&2
  # Joining restarts ejabberd on nodes 2 and 3: wait for their listeners to be back.
  for n in "${NODES[@]}"; do
    # shellcheck disable=SC2046
    if ! wait_listening "$dir/node$n" "$(node_name "$n")" $(cat "$dir/node$n/listen"); then
      down 2>/dev/null || true
      exit 1
    fi
  done
  touch "$dir/joined"
  log "cluster of 3 nodes up in $dir after about $((SECONDS - started)) s"
  print_ports
}

case $action in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
