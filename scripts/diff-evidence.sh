#!/usr/bin/env bash
# The real-kernel evidence for `proftrace diff` (tools/README.md, diff):
# records RUNS unchanged runs of a CG solve (examples/cg_solve.cpp) and one
# with 50 us spun into every `dot` call, then diffs unchanged pairs (each a
# chance of a false alarm), the pooled halves, and a normal run against the
# slow one. Timing-sensitive: run by hand, never from ctest.
#
#   scripts/diff-evidence.sh BUILD_DIR [OUT_DIR] [THRESHOLD_PCT]
#
# RUNS=N records N unchanged runs (default 20: 10 pairs); RECORD=0 diffs
# the runs already in OUT_DIR again (another threshold, same recordings).
set -euo pipefail
build=${1:?usage: scripts/diff-evidence.sh BUILD_DIR [OUT_DIR] [THRESHOLD_PCT]}
out=${2:-diff-evidence}
threshold=${3:-5}
runs=${RUNS:-20}
cg=$build/examples/proftrace_cg_solve
cli=$build/tools/proftrace
mkdir -p "$out"
if [ "${RECORD:-1}" != 0 ]; then
  for i in $(seq 1 "$runs"); do "$cg" "$out/run$i.json" >/dev/null; done
  PROFTRACE_CG_SLOW_DOT_US=50 "$cg" "$out/slow.json" >/dev/null
fi

alarms=0
pairs=0
for i in $(seq 1 2 "$runs"); do
  j=$((i + 1))
  [ "$j" -le "$runs" ] || break
  pairs=$((pairs + 1))
  rc=0
  "$cli" diff "$out/run$i.json" "$out/run$j.json" --threshold "$threshold" >"$out/pair$i.txt" 2>&1 || rc=$?
  if [ "$rc" = 3 ]; then alarms=$((alarms + 1)); echo "false alarm: run$i vs run$j"; grep '^regression:' "$out/pair$i.txt"; fi
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$out/pair$i.txt"; exit 1; }
done
echo "unchanged pairs: $alarms false alarms of $pairs (--threshold $threshold)"

half=$((runs / 2))
first=() second=()
for i in $(seq 1 "$half"); do first+=("$out/run$i.json"); second+=("$out/run$((i + half)).json"); done
rc=0
"$cli" diff "${first[@]}" -- "${second[@]}" --threshold "$threshold" >"$out/pooled.txt" 2>&1 || rc=$?
echo "pooled ($half runs against $half): exit $rc"

rc=0
"$cli" diff "$out/run1.json" "$out/slow.json" --threshold "$threshold" >"$out/slow.txt" 2>&1 || rc=$?
echo "injected 50 us per dot call: exit $rc"
grep '^regression:' "$out/slow.txt" || true
