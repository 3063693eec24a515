#!/usr/bin/env bash
# Fuzzes MQTTCore's packet decoder with libFuzzer + AddressSanitizer for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS]
#
# Runs on a copy of the committed seed corpus (Fuzz/corpus/decoder) plus a temporary directory for new
# inputs, prints the total executions, and exits non-zero on a crash, leak, timeout or failed oracle
# (the reproducer is kept under .build-fuzz/artifacts/; replay it with a plain build:
# `swift build --product FuzzPacketDecoder && $(swift build --show-bin-path)/FuzzPacketDecoder FILE`).
# To keep interesting new inputs, copy them from the printed directory into Fuzz/corpus/decoder.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# Built from Fuzz/, a package of its own with the same MQTTCore and FuzzPacketDecoder sources and swift-nio as its
# only dependency, which asks for coverage instrumentation of those two modules (-sanitize-coverage): with this
# toolchain `-sanitize=fuzzer` alone adds no coverage counters to Swift code, and the main package's builds gave
# instrumented objects only some of the time. Without counters libFuzzer fuzzes blind (six times faster, never a
# new input).
build_flags=(--package-path Fuzz --product FuzzPacketDecoder --scratch-path .build-fuzz
             --sanitize=fuzzer --sanitize=address -Xswiftc -DFUZZING)
swift build "${build_flags[@]}"
fuzzer="$(swift build "${build_flags[@]}" --show-bin-path)/FuzzPacketDecoder"

# Report whether the code under test is instrumented, and fail when it is not: a blind run would pass while
# testing far less than it claims.
objects_dir="$(dirname "$fuzzer")/MQTTCore.build"
objects=0
uninstrumented=0
for object in "$objects_dir"/*.swift.o; do
    objects=$((objects + 1))
    if [ "$(readelf -SW "$object" | grep -c __sancov_cntrs || true)" = 0 ]; then uninstrumented=$((uninstrumented + 1)); fi
done
counters="$(SWIFT_BACKTRACE=enable=no "$fuzzer" -runs=0 2>&1 |
    sed -n 's/^INFO: Loaded [0-9]* modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' | head -1)"
echo "fuzz.sh: ${counters:-?} coverage counters; $((objects - uninstrumented)) of $objects MQTTCore objects instrumented"
if [ "$objects" -eq 0 ] || [ "$uninstrumented" -ne 0 ]; then
    echo "fuzz.sh: FAILED: $uninstrumented of $objects MQTTCore objects have no coverage counters (a blind build)" >&2
    exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/fuzz-decoder.XXXXXX")"
artifacts="$root/.build-fuzz/artifacts"
mkdir -p "$work/new" "$artifacts"
cp -R Fuzz/corpus/decoder "$work/seed"
keep_work=0
cleanup() { if [ "$keep_work" = 0 ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

set +e
# SWIFT_BACKTRACE=enable=no: Swift's crash reporter otherwise triggers a false ASan report.
SWIFT_BACKTRACE=enable=no "$fuzzer" \
    -max_total_time="$seconds" \
    -max_len=4096 \
    -timeout=10 \
    -print_final_stats=1 \
    -artifact_prefix="$artifacts/" \
    "$work/new" "$work/seed" 2>&1 | tee "$work/fuzz.log"
status=${PIPESTATUS[0]}
set -e

executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)"
per_second="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -1)"
new_inputs="$(find "$work/new" -type f | wc -l)"
echo "fuzz.sh: ${executions:-?} executions in ${seconds} s (${per_second:-?} exec/s), ${new_inputs} new corpus inputs"
if [ "$status" -ne 0 ]; then
    keep_work=1
    echo "fuzz.sh: FAILED (libFuzzer exit status $status); reproducer in $artifacts, log and corpus in $work" >&2
    exit "$status"
fi
