"""Runs tests/c_api/fortran/mpi_program.f90 on two ranks and checks that each
rank's trace has the MPI calls it made from Fortran, through `use mpi` and
through `use mpi_f08`, with the C calls' names, bytes and peers.
Usage: check_fortran_mpi.py PROGRAM MPIEXEC [MPIEXEC ARGS...]"""
import glob
import json
import os
import subprocess
import sys
import tempfile

program, mpiexec = sys.argv[1], sys.argv[2:]


def inside(e, outer):
    return outer["tid"] == e["tid"] and outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 0.002


def check_rank(events, rank):
    spans = [e for e in events if e.get("ph") == "X"]
    for family in ("f77", "f08"):
        outer = [e for e in spans if e["name"] == family]
        assert len(outer) == 1, (rank, family, len(outer))
        calls = {}
        for e in spans:
            if e["name"].startswith("MPI_") and inside(e, outer[0]):
                calls.setdefault(e["name"], []).append(e.get("args", {}))
        expected = {"MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce", "MPI_Barrier",
                    "MPI_Send" if rank == 0 else "MPI_Recv"}
        assert set(calls) == expected, (rank, family, sorted(calls))
        assert all(len(v) == 1 for v in calls.values()), (rank, family, calls)
        isend, irecv = calls["MPI_Isend"][0], calls["MPI_Irecv"][0]
        assert isend["bytes"] == 32 and isend["peer"] == 1 - rank, isend
        assert irecv["bytes"] == 32 and irecv["peer"] == 1 - rank, irecv
        assert calls["MPI_Allreduce"][0]["bytes"] == 4, calls["MPI_Allreduce"]
        point = calls["MPI_Send"][0] if rank == 0 else calls["MPI_Recv"][0]
        # A receive from MPI_ANY_SOURCE names the rank it received from.
        assert point["bytes"] == 16 and point["peer"] == 1 - rank, point


with tempfile.TemporaryDirectory() as d:
    r = subprocess.run([*mpiexec, program, d], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    traces = sorted(glob.glob(os.path.join(d, "*.json")))
    assert len(traces) == 2, traces
    for t in traces:
        doc = json.load(open(t))
        check_rank(doc["traceEvents"], doc["distributedInfo"]["rank"])
print("ok")
