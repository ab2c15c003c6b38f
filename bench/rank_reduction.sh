#!/usr/bin/env bash
# The job's report across ranks at 2, 4, 8 and 16 ranks on this host
# (bench/rank_reduction.cpp; bench/README.md has the figures and the model).
#   bash bench/rank_reduction.sh BUILD_DIR [KEYS] [REPETITIONS]
# BUILD_DIR configured with -DPROFTRACE_BUILD_BENCH=ON -DPROFTRACE_WITH_MPI=ON.
#   PROFTRACE_RANK_VALUES_MAX=0 bash bench/rank_reduction.sh BUILD_DIR   # the figures only, no per-rank values
set -euo pipefail
build="${1:?usage: rank_reduction.sh BUILD_DIR [KEYS] [REPETITIONS]}"
keys="${2:-50}"
repetitions="${3:-20}"
cmake --build "$build" --target proftrace_bench_rank_reduction >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
echo "PROFTRACE_RANK_VALUES_MAX=${PROFTRACE_RANK_VALUES_MAX-unset (1024)}"
for ranks in 2 4 8 16; do
  mpirun --oversubscribe -np "$ranks" "$build/bench/proftrace_bench_rank_reduction" "$keys" "$repetitions"
done
