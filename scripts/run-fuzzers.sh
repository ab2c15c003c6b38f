#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and runs
# each for a fixed number of inputs over a copy of its seed corpus
# (tests/fuzz/corpus/<target>); any crash, leak, sanitizer report or
# failed check fails the script and leaves the reproducer in build-fuzz/.
#   bash scripts/run-fuzzers.sh
#   PROFTRACE_FUZZ_RUNS=200000 bash scripts/run-fuzzers.sh   # longer
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
runs="${PROFTRACE_FUZZ_RUNS:-20000}"
targets=(trace_reader_fuzzer json_string_fuzzer)

echo "=== fuzzers: build in ${build#$root/}"
CC="${CC_FUZZ:-clang}" CXX="${CXX_FUZZ:-clang++}" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPROFTRACE_BUILD_FUZZERS=ON -DPROFTRACE_BUILD_TESTS=OFF -DPROFTRACE_BUILD_EXAMPLES=OFF \
  -DPROFTRACE_BUILD_TOOLS=OFF -DPROFTRACE_BUILD_BENCH=OFF -DPROFTRACE_INSTALL=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$root/tests/fuzz/corpus/${target%_fuzzer}/"* "$corpus/"
  echo "=== $target: $runs inputs over $(ls "$corpus" | wc -l) seeds"
  # -timeout: one input taking longer is a hang; -rss_limit_mb: bounded memory.
  (cd "$build" && "./tests/fuzz/$target" -runs="$runs" -max_len=8192 -timeout=20 -rss_limit_mb=1024 \
     -print_final_stats=1 "$corpus" 2>&1 | tail -n 12)
done
echo "=== fuzzers: no crash"
