#!/usr/bin/env bash
# Sets up, builds and runs every test under ctest: the normal build (with the
# packaging tests), the OpenMP and counters suites built with clang (LLVM's
# libomp has OMPT; warnings are errors there), the Conan package's create
# and test_package, then the
# concurrency suites again under ThreadSanitizer and under AddressSanitizer
# with UndefinedBehaviorSanitizer, and finally the libFuzzer targets for a
# fixed number of inputs (scripts/run-fuzzers.sh).
#   bash scripts/run-tests.sh            # everything
#   PROFTRACE_SANITIZERS=0 bash scripts/run-tests.sh   # the normal build only
#   PROFTRACE_FUZZ=0 bash scripts/run-tests.sh         # without the fuzzers
#   PROFTRACE_CLANG=0 bash scripts/run-tests.sh        # without the clang suites
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
SECONDS=0
stage_start=0
took() {  # took WHAT: where the time goes, stage by stage (ctest also ends with its time per label)
  echo "=== $1 took $((SECONDS - stage_start)) s (all so far: $SECONDS s)"
  stage_start=$SECONDS
}
bash "$root/scripts/setup.sh"
took "setup"

run_suite() {  # run_suite BUILD_DIR [cmake args...]
  local dir="$1"; shift
  echo "=== ctest in ${dir#$root/} $*"
  cmake -S "$root" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  took "build of ${dir#$root/}"
  (cd "$dir" && ctest --output-on-failure -j"$jobs")
  took "ctest in ${dir#$root/}"
}

run_suite "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFTRACE_BUILD_BENCH=ON -DPROFTRACE_WITH_MPI=ON
# clang: only the suites that need it (OMPT through libomp) and the counters,
# with warnings as errors; about 45 s on 2 cores. The whole project builds and
# passes with clang too (CC=clang CXX=clang++), which takes as long as the
# GCC build above, more than CI's budget leaves.
if [ "${PROFTRACE_CLANG:-1}" != 0 ]; then
  echo "=== clang: openmp_test, counters_test"
  CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-clang-ci" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS=-Werror -DPROFTRACE_WITH_OPENMP=ON \
    -DPROFTRACE_WITH_FORTRAN=OFF -DPROFTRACE_BUILD_EXAMPLES=OFF -DPROFTRACE_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$root/build-clang-ci" -j"$jobs" --target openmp_test counters_test
  (cd "$root/build-clang-ci" && ctest --output-on-failure -j"$jobs" -R '^(openmp_test|openmp_tool_disabled_test|counters_test)$')
  took "clang suites"
fi
# The Conan 2 package, built and tested offline (PROFTRACE_CONAN=0 skips it).
if [ "${PROFTRACE_CONAN:-1}" != 0 ]; then
  bash "$root/scripts/conan-package.sh"
  took "Conan package"
fi
if [ "${PROFTRACE_SANITIZERS:-1}" != 0 ]; then
  # -O1 -g1 (line tables for the reports): the sanitizers' usual level, and
  # a third less compile time than -O2 -g, which keeps CI under 30 minutes.
  # The command line is single-threaded: ThreadSanitizer leaves it out, and
  # AddressSanitizer and the fuzzers check it.
  sanitized=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
             "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DPROFTRACE_BUILD_EXAMPLES=OFF)
  run_suite "$root/build-tsan" "${sanitized[@]}" -DPROFTRACE_SANITIZE=thread -DPROFTRACE_BUILD_TOOLS=OFF
  run_suite "$root/build-asan" "${sanitized[@]}" -DPROFTRACE_SANITIZE=address,undefined
fi
# About 2.5 minutes: the fuzzers' build and their runs (PROFTRACE_FUZZ=0 skips them).
if [ "${PROFTRACE_FUZZ:-1}" != 0 ]; then
  bash "$root/scripts/run-fuzzers.sh"
  took "fuzzers"
fi
