#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and runs
# each for a fixed number of inputs over a copy of its seed corpus
# (tests/fuzz/corpus/<target>). Any crash, sanitizer report, failed check,
# hang (over 20 s for one input) or memory over 2 GiB fails the script; the
# reproducer is left in build-fuzz/artifacts/ (add it to the corpus with the fix).
#   bash scripts/run-fuzzers.sh
#   PROFTRACE_FUZZ_SCALE=10 bash scripts/run-fuzzers.sh   # ten times the inputs
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
scale="${PROFTRACE_FUZZ_SCALE:-1}"
# Inputs per target: about 110 s, 5 s and 10 s of one core (the reader's inputs
# each go through five reads, summary DIR, a merge and a repair); with the build (about
# 45 s on two cores) the whole script takes about 2.7 minutes.
declare -A runs=([trace_reader_fuzzer]=$((30000 * scale)) [json_string_fuzzer]=$((300000 * scale))
                [kineto_event_fuzzer]=$((1000000 * scale)) [rank_partial_fuzzer]=$((300000 * scale)))
targets=(trace_reader_fuzzer json_string_fuzzer kineto_event_fuzzer rank_partial_fuzzer)

echo "=== fuzzers: build in ${build#$root/}"
CC="${PROFTRACE_FUZZ_CC:-clang}" CXX="${PROFTRACE_FUZZ_CXX:-clang++}" cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DPROFTRACE_BUILD_FUZZERS=ON -DPROFTRACE_BUILD_TESTS=OFF \
  -DPROFTRACE_BUILD_EXAMPLES=OFF -DPROFTRACE_BUILD_TOOLS=OFF -DPROFTRACE_BUILD_BENCH=OFF -DPROFTRACE_INSTALL=OFF \
  -DPROFTRACE_WITH_OTF2=OFF >/dev/null  # the format table's OTF2 row then names the package, as in a build without libotf2
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

# The leak check at each fuzzer's exit, without the __tls_get_addr interceptor
# that makes it crash by chance (cmake/ProftraceOptions.cmake says why).
export ASAN_OPTIONS="intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
mkdir -p "$build/artifacts"
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  log="$build/$target.log"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$root/tests/fuzz/corpus/${target%_fuzzer}/"* "$corpus/"
  echo "=== $target: ${runs[$target]} inputs from $(ls "$corpus" | wc -l) seeds"
  if ! "$build/tests/fuzz/$target" -runs="${runs[$target]}" -max_len=8192 -timeout=20 -rss_limit_mb=2048 \
       -artifact_prefix="$build/artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "=== $target FAILED: reproducer in ${build#$root/}/artifacts/, full log in ${log#$root/}" >&2
    exit 1
  fi
  grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$log"
done
echo "=== fuzzers: no crash"
