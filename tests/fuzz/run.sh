#!/bin/sh
# Builds the lib/wire fuzzer with clang (libFuzzer, ASan, UBSan) and runs it.
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]     default: 600 s, build-fuzz
# New inputs that reach new code go to a scratch folder; merge the kept
# corpus afterwards with:  wire_fuzzer -merge=1 tests/fuzz/corpus SCRATCH
# then record what each input comes to with update_outcomes.sh.
# libFuzzer's log (fuzz-0.log) and any finding (crash-*, leak-*, oom-*,
# timeout-*) are written into BUILD_DIR; the script then exits non-zero.
set -eu
seconds="${1:-600}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${2:-$src/build-fuzz}"
CC=clang CXX=clang++ cmake -S "$src" -B "$build" -DPSTRAIN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target wire_fuzzer -j2 >/dev/null
build="$(cd "$build" && pwd)"
scratch="$build/new-corpus"
mkdir -p "$scratch"
# -malloc_limit_mb: with a 1 MiB frame limit no decoder may ask for 64 MiB
# at once, so one such allocation is a finding. The RSS ceiling leaves room
# for ASan's quarantine (256 MiB by default) and libFuzzer's own tables.
cd "$build"
exec "$build/bin/wire_fuzzer" -max_total_time="$seconds" -jobs=1 \
  -workers=1 -rss_limit_mb=2048 -malloc_limit_mb=64 -max_len=4096 -print_final_stats=1 \
  "$scratch" "$src/tests/fuzz/corpus"
