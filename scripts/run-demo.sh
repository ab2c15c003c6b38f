#!/usr/bin/env bash
# The main job: set up, build, run the instrumented demo. It writes a
# Kineto-layout trace into ./out/demo (open it in https://ui.perfetto.dev or
# chrome://tracing) and prints the summary table.
#   bash scripts/run-demo.sh [--steps N] [--threads N] [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target proftrace_demo
args=("$@")
[[ " ${args[*]} " == *" --out "* ]] || args+=(--out "$root/out/demo")
"$root/build/examples/proftrace_demo" "${args[@]}"
