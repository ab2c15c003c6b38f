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
# Inputs per target: about 420 s of one core for the reader's (each input goes
# through five reads, summary DIR, a merge and a repair), 7 s for each of the
# others; with the build (about 80 s on two cores) the whole script takes
# about 5 minutes on two cores.
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
# The reader's inputs are split over one process per core (each input starts
# the reader's parsing threads, which AddressSanitizer makes dear: about 14 ms
# an input), each with a seed of its own, all sharing the corpus.
workers="$(nproc)"
run_worker() {  # run_worker TARGET RUNS LOG SEED
  "$build/tests/fuzz/$1" -runs="$2" -seed="$4" -max_len=8192 -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="$build/artifacts/" -print_final_stats=1 "$build/corpus/$1" >"$3" 2>&1
}
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$root/tests/fuzz/corpus/${target%_fuzzer}/"* "$corpus/"
  n=1
  [ "$target" = trace_reader_fuzzer ] && n="$workers"
  echo "=== $target: ${runs[$target]} inputs from $(ls "$corpus" | wc -l) seeds, $n process(es)"
  pids=()
  for ((i = 0; i < n; i++)); do
    run_worker "$target" $(((runs[$target] + i) / n)) "$build/$target.$i.log" $((RANDOM * 32768 + RANDOM + i)) &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    log="$build/$target.$i.log"
    if ! wait "${pids[$i]}"; then
      kill "${pids[@]}" 2>/dev/null || true
      tail -n 60 "$log"
      echo "=== $target FAILED: reproducer in ${build#$root/}/artifacts/, full log in ${log#$root/}" >&2
      exit 1
    fi
    grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$log"
  done
done
echo "=== fuzzers: no crash"
