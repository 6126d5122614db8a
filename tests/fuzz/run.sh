#!/bin/sh
# Builds a fuzzer with clang (libFuzzer, ASan, UBSan) and runs it over the
# kept corpus: wire_fuzzer (the lib/wire decoders) or shm_fuzzer (the
# shared-memory frame reader of lib/net, against a peer that scribbles).
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR] [TARGET]
#                    default: 600 s, build-fuzz, wire_fuzzer
# New inputs that reach new code go to a scratch folder (new-corpus, or
# new-corpus-TARGET for another target); merge the kept corpus afterwards
# with:  TARGET -merge=1 tests/fuzz/corpus SCRATCH
# then record what each input comes to with update_outcomes.sh.
# libFuzzer's log (fuzz-0.log) and any finding (crash-*, leak-*, oom-*,
# timeout-*) are written into BUILD_DIR; the script then exits non-zero.
# TARGET shm_in_place_test is no fuzzer: the shared-memory ring's in-place
# reads and the data reads' plan (tests/net/shm_test.cc, data_reads_test.cc)
# built and run once under ASan and UBSan (alignment included); the sums
# that read pieces in place run under UBSan in every build
# (in_place_ubsan_test).
# TARGET shm_stream_test is no fuzzer: the shared-memory stream's wake-up
# tests, built and run under ASan and UBSan in BUILD_DIR, then under TSan
# in BUILD_DIR-tsan, each repeated for about SECONDS (default 600).
set -eu
seconds="${1:-600}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${2:-$src/build-fuzz}"
target="${3:-wire_fuzzer}"
if [ "$target" = shm_in_place_test ]; then
  CC=clang CXX=clang++ cmake -S "$src" -B "$build" -DPSTRAIN_FUZZ=ON \
    -DPSTRAIN_FUZZ_SANITIZERS=address,undefined \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target shm_in_place_test -j2 >/dev/null
  exec "$build/bin/shm_in_place_test"
fi
if [ "$target" = shm_stream_test ]; then
  for sanitizers in address,undefined thread; do
    dir="$build"
    [ "$sanitizers" = thread ] && dir="$build-tsan"
    CC=clang CXX=clang++ cmake -S "$src" -B "$dir" -DPSTRAIN_FUZZ=ON \
      -DPSTRAIN_FUZZ_SANITIZERS="$sanitizers" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$dir" --target shm_stream_test -j2 >/dev/null
    echo "shm_stream_test under $sanitizers for ${seconds} s:"
    end=$(( $(date +%s) + seconds / 2 ))
    runs=0
    while [ "$(date +%s)" -lt "$end" ] || [ "$runs" -eq 0 ]; do
      TSAN_OPTIONS=halt_on_error=1 "$dir/bin/shm_stream_test" >"$dir/shm_stream_test.log" 2>&1 ||
        { cat "$dir/shm_stream_test.log"; exit 1; }
      runs=$((runs + 1))
    done
    echo "  $runs runs of $(grep -c '^\[       OK' "$dir/shm_stream_test.log") tests, every one passed"
  done
  exit 0
fi
CC=clang CXX=clang++ cmake -S "$src" -B "$build" -DPSTRAIN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "$target" -j2 >/dev/null
build="$(cd "$build" && pwd)"
scratch="$build/new-corpus"
if [ "$target" != wire_fuzzer ]; then
  scratch="$scratch-$target"
fi
mkdir -p "$scratch"
# -malloc_limit_mb: with a 1 MiB frame limit no decoder may ask for 64 MiB
# at once, so one such allocation is a finding. The RSS ceiling leaves room
# for ASan's quarantine (256 MiB by default) and libFuzzer's own tables.
cd "$build"
exec "$build/bin/$target" -max_total_time="$seconds" -jobs=1 \
  -workers=1 -rss_limit_mb=2048 -malloc_limit_mb=64 -max_len=4096 -print_final_stats=1 \
  "$scratch" "$src/tests/fuzz/corpus"
