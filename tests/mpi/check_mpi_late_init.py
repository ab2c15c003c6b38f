"""A session that PROFTRACE_CONFIG starts before MPI_Init measures its
clock offset once MPI has started, and merge uses it.
Usage: check_mpi_late_init.py CALLS_PROGRAM BRIDGE_PROGRAM PROFTRACE_CLI MPIEXEC [ARGS...]
CALLS_PROGRAM links proftrace::mpi_calls: MPI_Init measures the offset and
MPI_Finalize the one at stop. BRIDGE_PROGRAM links proftrace::mpi only: the
first step after MPI_Init measures it. Then with `ranks` (the job's report):
CALLS_PROGRAM's session ends at MPI_Finalize and rank 0 prints the job's
table; BRIDGE_PROGRAM's ends at exit, after MPI, and says why there is none."""
import glob
import json
import os
import subprocess
import sys
import tempfile

calls_program, bridge_program, cli, mpiexec = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def run(program, with_stop_offset):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PROFTRACE_CONFIG=f"out={d}")
        r = subprocess.run([*mpiexec, "-n", "2", "-x", "PROFTRACE_CONFIG", program], env=env, capture_output=True,
                           text=True, timeout=240)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        traces = sorted(glob.glob(os.path.join(d, "*.pt.trace.json")))
        assert len(traces) == 2, traces
        for t in traces:
            doc = json.load(open(t))
            assert doc["clockAlignment"]["method"] == "unix_time", doc["clockAlignment"]  # the head: before MPI_Init
            late = doc.get("clockAlignmentAfterMpiInit")
            assert late and late["method"] == "mpi_ping_pong" and "at_ns" in late, (program, t, late)
            stop = doc.get("clockAlignmentAtStop")
            assert (stop is not None) == with_stop_offset, (program, t, stop)
        merged = subprocess.run([cli, "merge", d, "-o", os.path.join(d, "job.json")], capture_output=True, text=True,
                                timeout=120)
        assert merged.returncode == 0, merged
        assert "without a measured clock offset" not in merged.stdout, merged.stdout


def run_job_report(program, reduced):
    """PROFTRACE_CONFIG's `ranks`: with MPI_Finalize wrapped the session ends
    there and rank 0 prints the job's table; without, it ends at exit, after
    MPI, and rank 0 prints its own table saying why not (no hang either way)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PROFTRACE_CONFIG=f"out={d},format=none,ranks,table")
        r = subprocess.run([*mpiexec, "-n", "3", "-x", "PROFTRACE_CONFIG", program], env=env, capture_output=True,
                           text=True, timeout=240)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert os.listdir(d) == [], os.listdir(d)  # profile-only: no trace
        if reduced:
            assert r.stderr.count("proftrace table of the job's 3 ranks") == 1 and "work" in r.stderr, r.stderr
            assert "proftrace table of rank" not in r.stderr, r.stderr
        else:
            assert r.stderr.count("proftrace table of rank 0 of 3") == 1, r.stderr
            assert "(no table of the job: no MPI to reduce over" in r.stderr, r.stderr


run(calls_program, with_stop_offset=True)
run(bridge_program, with_stop_offset=False)
run_job_report(calls_program, reduced=True)
run_job_report(bridge_program, reduced=False)
print("ok")
