#!/usr/bin/env bash
# The main job: installs what is needed, builds mqttchat, starts the mini broker on the
# shipped default config (broker-config/mqttchat.conf: 127.0.0.1:1883), and opens a chat
# session against it in room "lobby". Type to chat (/help lists the commands, /quit ends);
# when the session ends the broker is stopped too.
#
#   scripts/run.sh [--room ROOM] [--name NAME]       (defaults: lobby, $USER)
#
# With stdin not a terminal (e.g. `echo hello | scripts/run.sh`) the piped lines are sent
# and the session ends at EOF.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOM=lobby
NAME=${USER:-guest}
while [ $# -gt 0 ]; do
  case "$1" in
    --room) ROOM=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    *) echo "usage: scripts/run.sh [--room ROOM] [--name NAME]" >&2; exit 64 ;;
  esac
done

bash scripts/setup.sh
swift build --product mqttchat
BIN="$(swift build --show-bin-path)/mqttchat"
CONFIG=broker-config/mqttchat.conf

WORK=$(mktemp -d)
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN" broker -c "$CONFIG" >"$WORK/broker.out" 2>"$WORK/broker.log" &
BROKER_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/broker.out" 2>/dev/null && break
  if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "run.sh: the broker did not start:" >&2
    cat "$WORK/broker.log" >&2
    exit 1
  fi
  sleep 0.1
done
grep -q "listening on" "$WORK/broker.out" || { echo "run.sh: broker not ready after 10 s" >&2; exit 1; }
echo "run.sh: $(cat "$WORK/broker.out") (config $CONFIG; log in the session's temp dir)"
echo "run.sh: chatting in room '$ROOM' as '$NAME' — /help for commands, /quit to end"

PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\).*/\1/p' "$WORK/broker.out" | head -1)
"$BIN" chat -p "${PORT:-1883}" --room "$ROOM" --name "$NAME"
