#!/usr/bin/env bash
# Fuzzes MQTTCore's packet decoder with libFuzzer + AddressSanitizer for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS]
#   scripts/fuzz.sh --replay FILE_OR_DIR...    # run the decoder's checks once on each file (a reproducer, a corpus)
#
# Runs on a copy of the committed seed corpus (Fuzz/corpus/decoder) plus a temporary directory for new
# inputs, prints a short summary (coverage counters, executions, new inputs) and keeps libFuzzer's full output in
# .build-fuzz/fuzz.log. Exits non-zero on a crash, leak, timeout or failed oracle, printing the log's tail; the
# reproducer is kept under .build-fuzz/artifacts/: replay it with `scripts/fuzz.sh --replay FILE` (the same
# instrumented binary, which libFuzzer runs once per file given).
# To keep interesting new inputs, copy them from the printed directory into Fuzz/corpus/decoder.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
replay=0
if [ "${1:-}" = --replay ]; then
    replay=1
    shift
    [ $# -gt 0 ] || { echo "usage: scripts/fuzz.sh --replay FILE_OR_DIR..." >&2; exit 2; }
else
    seconds="${1:-60}"
fi

# Built from Fuzz/, a package of its own (its FuzzPacketDecoder sources, a symlink to Sources/MQTTCore, swift-nio as
# its only dependency), which asks for coverage instrumentation of those two modules (-sanitize-coverage): with
# this toolchain `-sanitize=fuzzer` alone adds no coverage counters to Swift code, and the main package's builds
# gave instrumented objects only some of the time. Without counters libFuzzer fuzzes blind (six times faster,
# never a new input).
build_flags=(--package-path Fuzz --product FuzzPacketDecoder --scratch-path .build-fuzz
             --sanitize=fuzzer --sanitize=address -Xswiftc -DFUZZING)
mkdir -p .build-fuzz
build_log=.build-fuzz/build.log
# ld.gold warns once per ASan symbol ("Cannot export local symbol '__asan_...'", about 140 lines per link):
# harmless, and kept out of the output (the whole build output is in .build-fuzz/build.log).
echo "fuzz.sh: building the fuzzer (Fuzz package, scratch path .build-fuzz; output in $build_log)"
if ! swift build "${build_flags[@]}" > "$build_log" 2>&1; then
    grep -v "Cannot export local symbol '__asan_" "$build_log" | tail -n 40 >&2
    echo "fuzz.sh: FAILED: the fuzzer did not build (full output: $root/$build_log)" >&2
    exit 1
fi
grep -E "warning:|error:" "$build_log" | grep -v "Cannot export local symbol '__asan_" >&2 || true
fuzzer="$(swift build "${build_flags[@]}" --show-bin-path)/FuzzPacketDecoder"

if [ "$replay" = 1 ]; then
    files=()
    for path in "$@"; do
        if [ -d "$path" ]; then
            while IFS= read -r file; do files+=("$file"); done < <(find "$path" -type f | sort)
        else
            files+=("$path")
        fi
    done
    # libFuzzer runs the target once on every file given as an argument and exits (non-zero on the first failure).
    SWIFT_BACKTRACE=enable=no "$fuzzer" "${files[@]}" > .build-fuzz/replay.log 2>&1 || {
        status=$?
        tail -n 40 .build-fuzz/replay.log >&2
        echo "fuzz.sh: replay FAILED (exit status $status; full log: $root/.build-fuzz/replay.log)" >&2
        exit "$status"
    }
    echo "fuzz.sh: replayed ${#files[@]} inputs, all passed"
    exit 0
fi

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
log="$root/.build-fuzz/fuzz.log"
mkdir -p "$work/new" "$artifacts"
cp -R Fuzz/corpus/decoder "$work/seed"
keep_work=0
cleanup() { if [ "$keep_work" = 0 ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

echo "fuzz.sh: fuzzing for ${seconds} s (libFuzzer's output: $log)"
set +e
# SWIFT_BACKTRACE=enable=no: Swift's crash reporter otherwise triggers a false ASan report.
SWIFT_BACKTRACE=enable=no "$fuzzer" \
    -max_total_time="$seconds" \
    -max_len=4096 \
    -timeout=10 \
    -print_final_stats=1 \
    -artifact_prefix="$artifacts/" \
    "$work/new" "$work/seed" > "$log" 2>&1
status=$?
set -e

# The lines worth seeing: the seed corpus loaded (INITED) and the end of the run (DONE), each with its coverage.
grep -a -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | sed 's/^/fuzz.sh: libFuzzer /' || true
executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
per_second="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
new_inputs="$(find "$work/new" -type f | wc -l)"
echo "fuzz.sh: ${executions:-?} executions in ${seconds} s (${per_second:-?} exec/s), ${new_inputs} new corpus inputs"
if [ "$status" -ne 0 ]; then
    keep_work=1
    echo "fuzz.sh: the last 40 lines of $log:" >&2
    tail -n 40 "$log" >&2
    echo "fuzz.sh: FAILED (libFuzzer exit status $status); reproducer in $artifacts, log in $log, corpus in $work" >&2
    exit "$status"
fi
