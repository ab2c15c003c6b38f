#!/usr/bin/env python3
"""Runs the demo the way the README does and checks its trace with Python's
standard json module: it parses, the trace holds exactly one ProfilerStep#N
per step (4 threads step; the others' spans are "thread step"), ts are
written against the shared fixed base, scopes nest (gemm_block inside blocked_matmul inside a step), and the
hooked allocations reach the trace, the table and the memory timeline."""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> int:
    demo = sys.argv[1]
    threads = 4
    with tempfile.TemporaryDirectory() as out:
        started_ns = time.time_ns()
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
        # Exactly one ProfilerStep#N per step, as torch writes (HTA and
        # TensorBoard take each one for a step); every worker still has one
        # span per step: ProfilerStep#N on the thread that drove the step,
        # "thread step" (args.step = N) on the others.
        profiler_steps = collections.Counter(e["name"] for e in complete if e["name"].startswith("ProfilerStep"))
        if profiler_steps != {"ProfilerStep#2": 1, "ProfilerStep#3": 1, "ProfilerStep#4": 1}:
            print("expected one ProfilerStep#N per step 2..4, found", dict(profiler_steps))
            return 1
        steps = collections.defaultdict(set)
        for e in complete:
            if e["name"].startswith("ProfilerStep#"):
                steps[e["tid"]].add(int(e["name"][len("ProfilerStep#"):]))
            elif e["name"] == "thread step":
                if e["cat"] != "user_annotation":
                    print("thread step with category", e["cat"])
                    return 1
                steps[e["tid"]].add(e["args"]["step"])
        if len(steps) != threads:
            print(f"step spans on {len(steps)} threads, expected {threads}")
            return 1
        for tid, numbers in steps.items():
            if numbers != {2, 3, 4}:
                print("thread", tid, "has steps", sorted(numbers))
                return 1
        # ts against one fixed base shared by every process (as Kineto's):
        # absolute time = base + ts, so ranks compare on ts alone.
        base = trace["baseTimeNanoseconds"]
        first_ts = min(e["ts"] for e in complete)
        if base % (1 << 51) != 0 and "PROFTRACE_TRACE_BASE_NS" not in os.environ:
            print("baseTimeNanoseconds is not the shared fixed base:", base)
            return 1
        if not (started_ns - 5e9 <= base + first_ts * 1000 <= time.time_ns()):
            print("base + ts is not the run's Unix time:", base, first_ts, started_ns)
            return 1
        # The table counts ProfilerStep* once per step (cells are right-aligned under their header).
        lines = run.stdout.splitlines()
        header = next((line for line in lines if "# of Calls" in line), "")
        calls_end = header.find("# of Calls") + len("# of Calls")
        table_steps = [line for line in lines if line.strip().startswith("ProfilerStep*")]
        if not header or not table_steps or table_steps[0][:calls_end].split()[-1] != "3":
            print("the table does not count ProfilerStep* once per step:", header, table_steps)
            return 1

        def contains(outer, inner):
            return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"]
                    and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.001)

        by_name = collections.defaultdict(list)
        for e in complete:
            by_name[e["name"]].append(e)
        for gemm in by_name["gemm_block"]:
            parents = [m for m in by_name["blocked_matmul"] if contains(m, gemm)]
            steps_around = [s for s in complete if (s["name"].startswith("ProfilerStep#") or s["name"] == "thread step")
                            and parents and contains(s, parents[0])]
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
