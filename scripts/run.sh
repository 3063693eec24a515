#!/usr/bin/env bash
# The main job: installs what is needed, builds mqttchat, starts the mini broker on the
# shipped default config (broker-config/mqttchat.conf: MQTT on 127.0.0.1:1883, and MQTT over
# WebSockets plus the browser chat page from web/ on 127.0.0.1:8080), prints the web chat's
# URL, and opens a chat session against it in room "lobby". Type to chat (/help lists the commands, /quit ends);
# when the session ends the broker is stopped too.
#
#   scripts/run.sh [--room ROOM] [--name NAME]       (defaults: lobby, your login name)
#
# With stdin not a terminal (e.g. `echo hello | scripts/run.sh`) the piped lines are sent
# and the session ends at EOF. The build's output and the broker's log are kept in
# ${XDG_STATE_HOME:-~/.local/state}/mqttchat/ (build.log, broker.log; each run overwrites them).
set -euo pipefail
cd "$(dirname "$0")/.."

ROOM=lobby
NAME=${USER:-$(id -un 2>/dev/null || echo guest)}
while [ $# -gt 0 ]; do
  case "$1" in
    --room) ROOM=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    *) echo "usage: scripts/run.sh [--room ROOM] [--name NAME]" >&2; exit 64 ;;
  esac
done

bash scripts/setup.sh
LOG_DIR="${XDG_STATE_HOME:-$HOME/.local/state}/mqttchat"
mkdir -p "$LOG_DIR"
echo "run.sh: building mqttchat (first build takes about 5 minutes on 2 cores; output in $LOG_DIR/build.log)…"
if ! swift build --product mqttchat >"$LOG_DIR/build.log" 2>&1; then
  echo "run.sh: the build failed; the end of $LOG_DIR/build.log:" >&2
  tail -n 30 "$LOG_DIR/build.log" >&2
  exit 1
fi
BIN="$(swift build --show-bin-path 2>>"$LOG_DIR/build.log")/mqttchat"
CONFIG=broker-config/mqttchat.conf
BROKER_LOG="$LOG_DIR/broker.log"

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

"$BIN" broker -c "$CONFIG" >"$WORK/broker.out" 2>"$BROKER_LOG" &
BROKER_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/broker.out" 2>/dev/null && break
  if ! kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "run.sh: the broker did not start:" >&2
    cat "$BROKER_LOG" >&2
    exit 1
  fi
  sleep 0.1
done
grep -q "listening on" "$WORK/broker.out" || { echo "run.sh: broker not ready after 10 s" >&2; exit 1; }
echo "run.sh: $(cat "$WORK/broker.out") (config $CONFIG; log $BROKER_LOG)"
PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\).*/\1/p' "$WORK/broker.out" | head -1)
PORT=${PORT:-1883}
echo "run.sh: a second participant (another terminal, while this session runs):" \
  "$(printf '%q ' "$BIN" chat -p "$PORT" --room "$ROOM" --name "${NAME}2" | sed 's/ $//')"
# The shipped config's second listener is the WebSocket one (protocol websockets, http_dir web): the broker
# serves the browser chat page there.
WEB_PORT=$(sed -n 's/.*listening on [^ ]* [^ ]*:\([0-9]*\).*/\1/p' "$WORK/broker.out" | head -1)
if [ -n "$WEB_PORT" ]; then
  echo "run.sh: the web chat (a browser on this machine): http://127.0.0.1:$WEB_PORT/?room=$ROOM&name=$NAME"
fi
echo "run.sh: chatting in room '$ROOM' as '$NAME' — /help for commands, /quit to end"

"$BIN" chat -p "$PORT" --room "$ROOM" --name "$NAME"
