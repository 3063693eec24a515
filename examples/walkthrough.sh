#!/usr/bin/env bash
# A two-minute tour of mqttchat, unattended: a broker, two chat users (alice and bob, driven by piped
# scripts) exchanging text, a gift and a direct message, and mosquitto_sub showing the raw MQTT topics
# underneath. Everything it starts is stopped on exit; every step is bounded.
#
#   MQTTCHAT_BIN=/path/to/mqttchat examples/walkthrough.sh     # default: $(swift build --show-bin-path)/mqttchat
#
# Needs mosquitto_sub (mosquitto-clients); the broker is `mqttchat broker -p 0` when the binary has it,
# otherwise mosquitto on a free port.
set -euo pipefail

BIN=${MQTTCHAT_BIN:-$(swift build --show-bin-path)/mqttchat}
[ -x "$BIN" ] || { echo "walkthrough: $BIN is not an executable (build it or set MQTTCHAT_BIN)" >&2; exit 1; }
command -v mosquitto_sub >/dev/null || { echo "walkthrough: mosquitto_sub is missing" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Prefix every line read with [NAME], so the interleaved output says who printed what. Background
# commands write into `> >(prefix NAME)` rather than a pipe, so that `$!` is the command itself (which
# the EXIT trap stops), not the last stage of a pipeline.
prefix() { while IFS= read -r line; do printf '[%s] %s\n' "$1" "$line"; done; }
step() { printf '\n== %s\n' "$*"; }

# Waits (at most 10 s) until something accepts TCP connections on 127.0.0.1:$1.
wait_for_port() {
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "walkthrough: nothing listens on port $1" >&2
    return 1
}

step "1. Start a broker"
# The binary has a broker when `mqttchat --help` lists the subcommand.
if "$BIN" --help 2>/dev/null | grep -qE '^[[:space:]]+broker([[:space:]]|$)'; then
    "$BIN" broker -p 0 >"$WORK/broker.log" 2>&1 &
    PIDS+=($!)
    PORT=""
    for _ in $(seq 100); do
        PORT=$(sed -n 's/.*mqttchat broker listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$WORK/broker.log" | head -n 1)
        [ -n "$PORT" ] && break
        sleep 0.1
    done
    [ -n "$PORT" ] || { echo "walkthrough: the broker did not report its port" >&2; cat "$WORK/broker.log" >&2; exit 1; }
    echo "mqttchat broker on port $PORT"
else
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf 'log_dest stdout\nlistener %s 127.0.0.1\nallow_anonymous true\n' "$PORT" >"$WORK/mosquitto.conf"
    mosquitto -c "$WORK/mosquitto.conf" >"$WORK/broker.log" 2>&1 &
    PIDS+=($!)
    echo "mosquitto on port $PORT (this mqttchat has no broker command)"
fi
wait_for_port "$PORT"

step "2. Watch the raw topics: mosquitto_sub -v -t 'mqttchat/#' (payloads are protobuf, shown as sizes)"
stdbuf -oL mosquitto_sub -h 127.0.0.1 -p "$PORT" -v -t 'mqttchat/#' -F '%t (%l bytes)' -W 40 > >(prefix raw) &
PIDS+=($!)
sleep 1

step "3. bob and alice chat in #lobby (each reads a script from a pipe, then leaves)"
# Timeline (seconds): bob joins at 0, alice at 1; alice talks at 2, bob answers at 4, alice asks
# who is here at 5; both scripts end and the sessions leave and disconnect by themselves.
{ sleep 4; echo "hi alice"; sleep 3; } |
    "$BIN" chat -p "$PORT" --room lobby --name bob --history-db "$WORK/bob.sqlite" > >(prefix bob) &
BOB=$!
PIDS+=($BOB)
sleep 1
{ sleep 1; echo "hello bob"; echo "/gift rose 2"; echo "/dm bob this one is just for you"; sleep 2; echo "/members"; sleep 1; } |
    "$BIN" chat -p "$PORT" --room lobby --name alice --history-db "$WORK/alice.sqlite" > >(prefix alice) &
ALICE=$!
PIDS+=($ALICE)
wait "$ALICE" "$BOB"
sleep 0.2  # let the prefixing readers print the last lines

step "4. bob's local history (mqttchat history)"
"$BIN" history --name bob --db "$WORK/bob.sqlite" | prefix history

step "5. One message through the plain MQTT commands: mqttchat subscribe decodes chat envelopes"
"$BIN" subscribe -p "$PORT" -t 'mqttchat/rooms/lobby/messages' -v -C 1 -W 10 > >(prefix subscribe) &
SUB=$!
PIDS+=($SUB)
sleep 1
"$BIN" publish -p "$PORT" --room lobby --name carol --chat-text "carol was here (mqttchat publish --chat-text)"
wait "$SUB"
sleep 0.5
step "Done"
