#!/usr/bin/env python3
"""Loads the demo's traces with Holistic Trace Analysis, as a user would.

Two ranks of the demo (RANK/WORLD_SIZE, 4 threads each) start about 300 ms
apart. HTA must find both ranks, the steps 2..4 once each (one ProfilerStep#N
per step; HTA keeps 2 and 3, cutting at the last step's start) on every
rank, and keep the ranks' real offset: HTA aligns ranks on
`ts` alone (it ignores baseTimeNanoseconds), so rank 1's steps must start,
in HTA's frame, as much later as they did in Unix time.

usage: check_hta.py DEMO VENV_DIR

The virtualenv is created once in VENV_DIR (the build tree) and reused; where
PyPI cannot be reached the test is skipped (exit 77) with a message.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cached_venv import SKIP, ensure_venv, venv_python  # noqa: E402

PACKAGE = "HolisticTraceAnalysis"
RUNTIME_DEPS = ["pandas", "numpy", "networkx", "plotly", "psutil", "pyyaml", "pydot"]


def ensure_hta_venv(venv: str) -> bool:
    # HTA's own requirements pull in JupyterLab and pytest (about 100
    # packages, 500 MB); its trace loader needs only these.
    return ensure_venv(venv, [["--no-deps", PACKAGE], RUNTIME_DEPS], PACKAGE, timeout=300) is not None


# Runs in the virtualenv: prints what HTA sees as JSON.
HTA_PROBE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
t = a.t
out = {"ranks": sorted(int(r) for r in t.get_ranks()), "steps": {}}
for rank in out["ranks"]:
    df = t.get_trace(rank)
    names = t.symbol_table.get_sym_table()
    named = df.assign(label=[names[i] for i in df["name"]])
    steps = named[named["label"].str.match(r"^ProfilerStep#\d+")]
    out["steps"][str(rank)] = sorted(((str(r.label), float(r.ts)) for r in steps.itertuples()), key=lambda x: x[0])
    if "iteration" in df.columns:
        out.setdefault("iterations", {})[str(rank)] = sorted(int(i) for i in df["iteration"].unique() if int(i) >= 0)
print(json.dumps(out))
"""


def main() -> int:
    demo, venv = sys.argv[1], sys.argv[2]
    if not ensure_hta_venv(venv):
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        traces = os.path.join(tmp, "traces")
        os.makedirs(traces)
        # One rank after the other: rank 1's steps come at least 300 ms after
        # rank 0's however slowly a loaded machine starts either.
        for rank in (0, 1):
            if rank == 1:
                time.sleep(0.3)
            out = os.path.join(tmp, f"rank{rank}")
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2")
            p = subprocess.Popen([demo, "--steps", "6", "--threads", "4", "--size", "128", "--out", out],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            stdout, stderr = p.communicate(timeout=120)
            if p.returncode != 0:
                print(f"demo rank {rank} failed:", stdout, stderr)
                return 1
            for f in glob.glob(os.path.join(tmp, f"rank{rank}", "*.pt.trace.json")):
                shutil.copy(f, traces)
        # Our own view: absolute Unix ns of each rank's ProfilerStep#N.
        absolute = {}
        for f in glob.glob(os.path.join(traces, "*.json")):
            with open(f) as fh:
                trace = json.load(fh)
            rank = trace["distributedInfo"]["rank"]
            for e in trace["traceEvents"]:
                if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"):
                    absolute[(rank, e["name"])] = trace["baseTimeNanoseconds"] + round(e["ts"] * 1000)
        started = time.monotonic()
        probe = subprocess.run([venv_python(venv), "-c", HTA_PROBE, traces], capture_output=True, text=True,
                               timeout=120)
        if probe.returncode != 0:
            print("HTA failed to load the traces:", probe.stdout[-2000:], probe.stderr[-4000:])
            return 1
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
        print(f"HTA loaded the traces in {time.monotonic() - started:.1f} s:", json.dumps(seen))
        if seen["ranks"] != [0, 1]:
            print("HTA ranks:", seen["ranks"], "expected [0, 1]")
            return 1
        # Our files: exactly one ProfilerStep#N per step 2..4 on each rank.
        for rank in (0, 1):
            if sorted(n for r, n in absolute if r == rank) != ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]:
                print(f"rank {rank}: trace steps", sorted(absolute))
                return 1
        # HTA keeps the iterations that end before the last step begins (it
        # cuts at the last ProfilerStep#N's start, as on torch's traces): with
        # one ProfilerStep#N per step, that is steps 2 and 3 whole.
        expected_steps = ["ProfilerStep#2", "ProfilerStep#3"]
        for rank in ("0", "1"):
            names = [n for n, _ in seen["steps"][rank]]
            if names != expected_steps:
                print(f"rank {rank}: HTA sees steps {names}, expected one each of {expected_steps}")
                return 1
            if "iterations" in seen and seen["iterations"][rank] != [2, 3]:
                print(f"rank {rank}: HTA iterations {seen['iterations'][rank]}, expected [2, 3]")
                return 1
        # Alignment: in HTA's frame, rank 1's step starts as much after rank 0's
        # as in Unix time (HTA reads ts, to whole microseconds; it ignores the base).
        for i, name in enumerate(expected_steps):
            hta_gap_us = seen["steps"]["1"][i][1] - seen["steps"]["0"][i][1]
            real_gap_us = (absolute[(1, name)] - absolute[(0, name)]) / 1000
            if abs(hta_gap_us - real_gap_us) > 2.0:
                print(f"{name}: rank 1 - rank 0 is {hta_gap_us:.3f} us in HTA, {real_gap_us:.3f} us in Unix time")
                return 1
        gap_ms = (absolute[(1, "ProfilerStep#2")] - absolute[(0, "ProfilerStep#2")]) / 1e6
        if gap_ms < 100:
            print(f"rank 1 started 300 ms after rank 0 ended, its step 2 only {gap_ms:.1f} ms later")
            return 1
    print("HTA: 2 ranks, one ProfilerStep#N per step, rank offset kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
