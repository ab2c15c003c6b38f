"""PROFTRACE_CONFIG under mpirun: each rank of a macros-only program
(tests/c_api/env_program.cpp) writes its own trace, named by its rank, and
its table to stderr headed by its rank.
Usage: check_env_mpi.py PROGRAM MPIEXEC [MPIEXEC ARGS...]"""
import glob
import os
import subprocess
import sys
import tempfile

program, mpiexec = sys.argv[1], sys.argv[2:]
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, PROFTRACE_CONFIG=f"out={d},table")
    r = subprocess.run([*mpiexec, "-x", "PROFTRACE_CONFIG", program], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.pt.trace.json")))
    assert len(names) == 2 and names[0].startswith("rank0_") and names[1].startswith("rank1_"), names
    for rank in (0, 1):
        assert f"proftrace table of rank {rank} of 2 on " in r.stderr, r.stderr
print("ok")
