#!/usr/bin/env bash
# Regenerates Sources/MQTTChat/Generated/chat.pb.swift from Sources/MQTTChat/Proto/chat.proto.
#
# The generated Swift is committed, so a normal build never needs protoc. This script builds
# protoc-gen-swift from the mirrored swift-protobuf at the same version the package depends on
# (1.39.0) so that the generated code matches the runtime library, and runs protoc with it.
# UseAccessLevelOnImports makes it `public import SwiftProtobuf`, which the package's
# InternalImportsByDefault setting needs for public generated types.
# We deliberately do not use the SwiftProtobuf build plugin: it makes a cold build several minutes slower.
#
# Usage: scripts/gen-proto.sh            (work dir defaults to .build-protogen at the repo root)
#        PROTOGEN_DIR=/tmp/x scripts/gen-proto.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

SWIFT_PROTOBUF_VERSION="1.39.0"
SWIFT_PROTOBUF_MIRROR="${SWIFT_PROTOBUF_MIRROR:-/opt/swift-packages/apple/swift-protobuf.git}"
WORK_DIR="${PROTOGEN_DIR:-$ROOT/.build-protogen}"
PLUGIN_SRC="$WORK_DIR/swift-protobuf-$SWIFT_PROTOBUF_VERSION"

command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler" >&2; exit 1; }

mkdir -p "$WORK_DIR"
if [ ! -d "$PLUGIN_SRC/.git" ]; then
  git clone --quiet --depth 1 --branch "$SWIFT_PROTOBUF_VERSION" "$SWIFT_PROTOBUF_MIRROR" "$PLUGIN_SRC"
fi
( cd "$PLUGIN_SRC" && swift build -c release --product protoc-gen-swift )
PLUGIN="$(cd "$PLUGIN_SRC" && swift build -c release --product protoc-gen-swift --show-bin-path)/protoc-gen-swift"

OUT_DIR="$ROOT/Sources/MQTTChat/Generated"
mkdir -p "$OUT_DIR"
protoc \
  --plugin="protoc-gen-swift=$PLUGIN" \
  --proto_path="$ROOT/Sources/MQTTChat/Proto" \
  --swift_out="$OUT_DIR" \
  --swift_opt=Visibility=Public \
  --swift_opt=UseAccessLevelOnImports=true \
  "$ROOT/Sources/MQTTChat/Proto/chat.proto"
echo "generated $OUT_DIR/chat.pb.swift with protoc-gen-swift $SWIFT_PROTOBUF_VERSION ($(protoc --version))"
