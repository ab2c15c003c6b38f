#!/usr/bin/env python3
"""A CPU-only program built against the CUDA-enabled libproftrace, on a
machine without CUDA (issue 16).

Statically: neither the program nor libproftrace.a needs libcupti or
libcudart (no NEEDED entry, nothing in ldd, no undefined cuda*/cupti*
symbol). Then the programs run with PROFTRACE_CUDA_LIBRARY_DIRS naming an
empty directory, so the libraries cannot be found: with default activities
the run is silent (empty stderr), writes a valid trace and reports no CUDA
activity; naming activity::cuda is exactly one warning that says which
library is missing, and the CPU profile is complete; timeit times the host
only, silently. Last, with the
libraries where they are (this machine has no driver), default activities
stay silent too.

usage: check.py NM READELF LIBRARY PROGRAM NAMED_PROGRAM WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys

CUDA_BIT = 1 << 1  # proftrace::activity::cuda
CUDA_LIBRARY = re.compile(r"lib(cupti|cudart|cuda)\.so")
CUDA_UNDEFINED = re.compile(r"^\s*U (cuda|cupti)\w*", re.M)


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)


def check_binaries(nm, readelf, library, programs):
    errors = []
    out = run([nm, "-u", library]).stdout
    if "dlopen" not in out:  # the control: nm's listing is read, and the library does dlopen
        errors.append(f"nm -u {library} lists no dlopen: cannot trust the symbol check")
    errors += [f"{library}: undefined {m.group(0).strip()}" for m in CUDA_UNDEFINED.finditer(out)]
    for p in programs:
        needed = [l for l in run([readelf, "-d", p]).stdout.splitlines() if "(NEEDED)" in l]
        if not needed:
            errors.append(f"readelf -d {p} shows no NEEDED entry: cannot trust the check")
        errors += [f"{p} needs {l.split('[')[-1].rstrip(']')}" for l in needed if CUDA_LIBRARY.search(l)]
        errors += [f"{p}: ldd resolves {l.strip()}" for l in run(["ldd", p]).stdout.splitlines()
                   if CUDA_LIBRARY.search(l)]
        for flags in (["-u"], ["-D", "-u"]):
            errors += [f"{p}: undefined {m.group(0).strip()}"
                       for m in CUDA_UNDEFINED.finditer(run([nm, *flags, p]).stdout)]
    return errors


def run_program(program, trace, env):
    if os.path.exists(trace):
        os.remove(trace)
    r = run([program, trace], env)
    if r.returncode != 0:
        return r, None, f"{program} exited {r.returncode}: {r.stderr}"
    with open(trace) as f:
        t = json.load(f)
    work = [e for e in t["traceEvents"] if e.get("name") == "cuda_absent.work" and e.get("ph") == "X"]
    if len(work) != 3:
        return r, t, f"{program}: {len(work)} 'cuda_absent.work' events in the trace, expected 3"
    m = re.search(r"activities 0x([0-9a-f]+)", r.stdout)
    if not m:
        return r, t, f"{program} printed no activities: {r.stdout!r}"
    r.activities = int(m.group(1), 16)
    m = re.search(r"timeit synchronized ([01])", r.stdout)
    if not m:
        return r, t, f"{program} printed no timeit line: {r.stdout!r}"
    r.synchronized = m.group(1) == "1"
    return r, t, None


def main():
    nm, readelf, library, program, named, work = sys.argv[1:7]
    errors = check_binaries(nm, readelf, library, [program, named])

    shutil.rmtree(work, ignore_errors=True)
    empty = os.path.join(work, "no-cuda-here")
    os.makedirs(empty)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROFTRACE_")}
    base["PROFTRACE_SPOOL_DIR"] = work
    absent = dict(base, PROFTRACE_CUDA_LIBRARY_DIRS=empty)
    trace = os.path.join(work, "t.json")

    r, t, e = run_program(program, trace, absent)
    if e:
        errors.append("no CUDA libraries, default activities: " + e)
    else:
        if r.stderr:
            errors.append(f"no CUDA libraries, default activities: stderr not empty:\n{r.stderr}")
        if r.activities & CUDA_BIT:
            errors.append("no CUDA libraries, default activities: activities() still names CUDA")
        if t.get("deviceProperties"):
            errors.append("no CUDA libraries: the trace has deviceProperties")
        if r.synchronized:
            errors.append("no CUDA libraries: timeit says it waited for a device")

    r, t, e = run_program(named, trace, absent)
    if e:
        errors.append("no CUDA libraries, CUDA named: " + e)
    else:
        lines = r.stderr.splitlines()
        if len(lines) != 1 or not lines[0].startswith("proftrace: warning: "):
            errors.append(f"no CUDA libraries, CUDA named: expected one warning, stderr:\n{r.stderr}")
        elif not re.search(r"libcupti\.so(\.\d+)? not found \(dlopen: .+\)", lines[0]) \
                or "PROFTRACE_CUDA_LIBRARY_DIRS" not in lines[0]:
            errors.append(f"no CUDA libraries, CUDA named: the warning does not give the reason: {lines[0]}")
        if r.activities & CUDA_BIT:
            errors.append("no CUDA libraries, CUDA named: activities() still names CUDA")

    r, t, e = run_program(program, trace, base)
    if e:
        errors.append("CUDA libraries present, default activities: " + e)
    elif r.stderr:
        errors.append(f"CUDA libraries present, default activities: stderr not empty:\n{r.stderr}")

    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("no CUDA library needed; silent without them; one warning with the reason where CUDA was named")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
