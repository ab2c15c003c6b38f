#!/usr/bin/env python3
"""Runs the demo the way the README does and checks its trace with Python's
standard json module: it parses, every worker thread has ProfilerStep#N
events, scopes nest (gemm_block inside blocked_matmul inside a step), and the
hooked allocations reach the trace, the table and the memory timeline."""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    demo = sys.argv[1]
    threads = 3
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([demo, "--steps", "6", "--threads", str(threads), "--out", out],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        # Built with CUDA on a machine without a driver: one warning, then the CPU profile as usual.
        cuda_warnings = [line for line in run.stderr.splitlines() if "CUDA" in line]
        if len(cuda_warnings) > 1:
            print("more than one CUDA warning:\n" + "\n".join(cuda_warnings))
            return 1
        if "Self CPU time total:" not in run.stdout or "ProfilerStep*" not in run.stdout:
            print("summary table missing from the demo's output:\n" + run.stdout)
            return 1
        files = glob.glob(os.path.join(out, "*.pt.trace.json"))
        if len(files) != 1:
            print("expected one trace, found", files)
            return 1
        with open(files[0]) as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        complete = [e for e in events if e.get("ph") == "X"]
        steps = collections.defaultdict(set)
        for e in complete:
            if e["name"].startswith("ProfilerStep#"):
                steps[e["tid"]].add(e["name"])
        if len(steps) != threads:
            print(f"ProfilerStep events on {len(steps)} threads, expected {threads}")
            return 1
        for tid, names in steps.items():
            if names != {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"}:
                print("thread", tid, "has steps", sorted(names))
                return 1

        def contains(outer, inner):
            return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"]
                    and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.001)

        by_name = collections.defaultdict(list)
        for e in complete:
            by_name[e["name"]].append(e)
        for gemm in by_name["gemm_block"]:
            parents = [m for m in by_name["blocked_matmul"] if contains(m, gemm)]
            steps_around = [s for s in complete if s["name"].startswith("ProfilerStep#") and parents and contains(s, parents[0])]
            if not parents or not steps_around:
                print("gemm_block not nested in blocked_matmul inside a step:", gemm)
                return 1
        named = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
        if not {f"worker {i}" for i in range(threads)} <= named:
            print("thread names missing:", named)
            return 1
        memory = [e for e in events if e.get("name") == "[memory]"]
        if not memory or any(e["args"]["Bytes"] == 0 for e in memory):
            print("no [memory] events from the demo's temporary buffers")
            return 1
        with open(os.path.join(out, "demo.memory.html")) as f:
            if 'data-category="TEMPORARY"' not in f.read():
                print("the memory timeline has no TEMPORARY series")
                return 1
        if "Peak host memory allocated:" not in run.stdout:
            print("the demo did not print its peak memory:\n" + run.stdout)
            return 1
        if "CPU Mem" not in run.stdout:
            print("the summary table has no memory columns:\n" + run.stdout)
            return 1
        for key in ("schemaVersion", "deviceProperties", "displayTimeUnit", "baseTimeNanoseconds", "traceName"):
            if key not in trace:
                print("missing key", key)
                return 1
    print("demo trace OK:", len(complete), "complete events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
