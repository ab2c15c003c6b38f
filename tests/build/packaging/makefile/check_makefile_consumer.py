"""Builds tests/build/packaging/makefile/Makefile against an installed proftrace
through pkg-config alone, runs the programs and checks what they link.

  check_makefile_consumer.py --prefix PREFIX --tests TESTS_DIR --work WORK_DIR
      [--zero-cost] [--fortran] [--mpiexec MPIEXEC]

Enabled install: the C, C++ and Fortran programs record their traces
(tests/c_api/check_trace.py for C and Fortran), none of them depends on an
MPI library, and the MPI program (with --mpiexec) records its MPI calls on
two ranks with clocks aligned over MPI. Zero-cost install: the C program
links as C (no C++ runtime), and no program depends on proftrace, Boost or
MPI."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def needed(binary):
    out = run(["readelf", "-d", binary]).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def make(args, env, target, **variables):
    extra = [f"{k}={v}" for k, v in variables.items()]
    run(["make", "-C", args.work, "-f", os.path.join(HERE, "Makefile"), f"TESTS={args.tests}", target, *extra],
        env=env)
    return os.path.join(args.work, target)


def check_no_library(binary, pattern_words):
    bad = [n for n in needed(binary) if any(w in n for w in pattern_words)]
    if bad:
        sys.exit(f"{os.path.basename(binary)} depends on {bad}")


def enabled(args, env):
    c = make(args, env, "c_program")
    run([sys.executable, os.path.join(args.tests, "c_api", "check_trace.py"), c, "c"])
    cxx = make(args, env, "cxx_program")
    run([cxx, os.path.join(args.work, "consumer.pt.trace.json")])
    programs = [c, cxx]
    if args.fortran:
        f = make(args, env, "fortran_program")
        run([sys.executable, os.path.join(args.tests, "c_api", "check_trace.py"), f, "fortran"])
        programs.append(f)
    for p in programs:  # MPI reaches only programs that ask for it
        check_no_library(p, ["mpi", "open-pal", "hwloc"])
    if args.mpiexec:
        mpi_program(args, env)


def mpi_program(args, env):
    program = make(args, env, "mpi_program")
    out = os.path.join(args.work, "mpi_traces")
    shutil.rmtree(out, ignore_errors=True)
    run([args.mpiexec, "-n", "2", program, out], env=env)
    traces = sorted(glob.glob(os.path.join(out, "*.json")))
    assert len(traces) == 2, traces
    for t in traces:
        doc = json.load(open(t))
        names = {e.get("name") for e in doc["traceEvents"]}
        assert "MPI_Sendrecv" in names and "MPI_Barrier" in names, (t, sorted(n for n in names if n))
        assert doc["distributedInfo"]["source"] == "MPI_Comm_rank", doc["distributedInfo"]
        assert doc["clockAlignment"]["method"] == "mpi_ping_pong", doc["clockAlignment"]


def zero_cost(args, env):
    c = make(args, env, "c_program", C_SOURCE=os.path.join(args.tests, "c_api", "disabled.c"))
    run([c])
    check_no_library(c, ["stdc++", "gcc_s", "boost", "mpi", "proftrace"])
    cxx = make(args, env, "cxx_program")
    run([cxx, os.path.join(args.work, "consumer.pt.trace.json")])
    check_no_library(cxx, ["boost", "mpi", "proftrace"])
    if args.fortran:
        f = make(args, env, "fortran_program",
                 FORTRAN_SOURCE=os.path.join(args.tests, "build", "packaging", "consumer", "zero_cost.f90"))
        run([f, os.path.join(args.work, "fortran_traces")])
        check_no_library(f, ["stdc++", "boost", "mpi", "proftrace"])
    for module in ["proftrace-mpi", "proftrace-mpi-calls", "proftrace-new-hook"]:
        run(["pkg-config", "--exists", "--print-errors", module], env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--tests", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--zero-cost", action="store_true")
    ap.add_argument("--fortran", action="store_true")
    ap.add_argument("--mpiexec")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    pc = glob.glob(os.path.join(args.prefix, "lib*", "**", "pkgconfig"), recursive=True) + \
        glob.glob(os.path.join(args.prefix, "lib*", "pkgconfig"))
    if not pc:
        sys.exit(f"no pkgconfig folder under {args.prefix}")
    env = dict(os.environ, PKG_CONFIG_PATH=os.pathsep.join(sorted(set(pc))), PROFTRACE_DISABLE_CUDA="1")
    zero_cost(args, env) if args.zero_cost else enabled(args, env)
    print("makefile consumer: ok")


if __name__ == "__main__":
    main()
