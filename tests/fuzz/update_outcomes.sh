#!/bin/sh
# Rewrites tests/fuzz/corpus_outcomes.txt, the outcome of every corpus input
# that FuzzCorpusTest checks, from the fuzz build (clang, as run.sh makes
# it). Run it after merging new inputs into the corpus or after changing a
# check of lib/wire, then review the diff: every changed line is an input
# that is now accepted or refused differently.
#   tests/fuzz/update_outcomes.sh [BUILD_DIR]     default: build-fuzz
set -eu
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build-fuzz}"
CC=clang CXX=clang++ cmake -S "$src" -B "$build" -DPSTRAIN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target wire_corpus_outcomes -j2 >/dev/null
"$build/bin/wire_corpus_outcomes" "$src/tests/fuzz/corpus" \
  >"$src/tests/fuzz/corpus_outcomes.txt"
