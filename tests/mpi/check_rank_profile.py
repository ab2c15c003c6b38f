#!/usr/bin/env python3
"""The job's report across ranks as a profile: Thicket reads it, `proftrace summary` prints its table.

usage: check_rank_profile.py MPIEXEC NP_FLAG PROGRAM PROFTRACE VENV_DIR WORK_DIR

Runs PROGRAM (tests/mpi/rank_reduction_mpi.cpp) under `MPIEXEC NP_FLAG 4`
with PROFTRACE_TEST_RANK_PROFILE set: rank 0 writes job.cali.json
(rank_averages::write_profile) and the table rank_averages::table() printed
(job.cali.json.table). Checks:
- thicket.Thicket.from_caliper loads the profile with one row per call-path
  node and rank (4 ranks), "kernel"'s per-rank counts and inclusive times
  are the program's (10 calls, (rank + 1) ms), and mpi.world.size is 4;
- `proftrace summary job.cali.json` prints exactly that table;
- again with PROFTRACE_RANK_VALUES_MAX=2 (fewer than the 4 ranks: no
  per-rank values), job-stats.cali.json: Thicket reads one row per node,
  "kernel" with its calls and time summed over the ranks and its min / max
  columns and ranks, and `proftrace summary` prints exactly its table.
The virtualenv (llnl-hatchet, llnl-thicket from PyPI) is made once in
VENV_DIR; where PyPI cannot be reached the test is skipped (exit 77).
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cached_venv import SKIP, ensure_venv  # noqa: E402

RANKS = 4

# Runs in the virtualenv: what Thicket sees of the profile, as JSON.
THICKET_PROBE = r"""
import json, sys, warnings, io, contextlib
warnings.simplefilter("ignore")
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import thicket as th
    tk = th.Thicket.from_caliper([sys.argv[1]])
df = tk.dataframe.reset_index()
extra = ["min#inclusive#sum#time.duration", "max#inclusive#sum#time.duration", "proftrace.max_rank"]
rows = [{"name": r["node"].frame["name"], "rank": int(r["rank"]) if "rank" in r else None, "count": float(r["count"]),
         "inc": float(r["time (inc)"]), **{k: float(r[k]) for k in extra if k in r}} for r in df.to_dict("records")]
meta = tk.metadata.reset_index().to_dict("records")[0]
print(json.dumps({"rows": rows, "nodes": len(list(tk.graph.traverse())),
                  "world_size": int(meta.get("mpi.world.size", 0))}))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def thicket_sees(python, profile):
    p = run([python, "-c", THICKET_PROBE, profile])
    assert p.returncode == 0, f"Thicket failed on {profile}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen["world_size"] == RANKS, seen["world_size"]
    return seen, seen["rows"]


def check_thicket(python, profile):
    seen, rows = thicket_sees(python, profile)
    assert len(rows) == seen["nodes"] * RANKS, (len(rows), seen["nodes"])
    assert sorted({r["rank"] for r in rows}) == list(range(RANKS)), rows[:8]
    kernel = sorted((r for r in rows if r["name"] == "kernel"), key=lambda r: r["rank"])
    assert [r["count"] for r in kernel] == [10.0] * RANKS, kernel
    for r in kernel:
        assert abs(r["inc"] - (r["rank"] + 1) * 1e-3) < 1e-12, kernel
    print(f"Thicket: {seen['nodes']} nodes x {RANKS} ranks")


def check_thicket_stats(python, profile):
    seen, rows = thicket_sees(python, profile)
    assert len(rows) == seen["nodes"] and all(r["rank"] is None for r in rows), (len(rows), seen["nodes"], rows[:4])
    kernel = [r for r in rows if r["name"] == "kernel"]
    assert len(kernel) == 1, rows
    k = kernel[0]
    assert k["count"] == 10.0 * RANKS, k
    assert abs(k["inc"] - RANKS * (RANKS + 1) / 2 * 1e-3) < 1e-12, k
    assert abs(k["min#inclusive#sum#time.duration"] - 1e-3) < 1e-12, k
    assert abs(k["max#inclusive#sum#time.duration"] - RANKS * 1e-3) < 1e-12, k
    assert k["proftrace.max_rank"] == RANKS - 1, k
    print(f"Thicket, without per-rank values: {seen['nodes']} nodes, one row each")


def check_summary(proftrace, profile):
    with open(profile + ".table") as f:
        table = f.read()
    summary = run([proftrace, "summary", profile])
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout == table, f"summary:\n{summary.stdout}\ntable():\n{table}"
    print(f"proftrace summary {os.path.basename(profile)}: the table of rank_averages::table(), "
          f"{len(table.splitlines())} lines")


def main():
    mpiexec, np_flag, program, proftrace, venv, work = sys.argv[1:7]
    python = ensure_venv(venv, [["llnl-hatchet", "llnl-thicket"]], "llnl-hatchet and llnl-thicket")
    if python is None:
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    profile = os.path.join(work, "job.cali.json")
    stats = os.path.join(work, "job-stats.cali.json")
    for path, bound in ((profile, None), (stats, "2")):
        env = dict(os.environ, PROFTRACE_TEST_RANK_PROFILE=path)
        env.pop("PROFTRACE_RANK_VALUES_MAX", None)
        if bound:
            env["PROFTRACE_RANK_VALUES_MAX"] = bound
        p = run([mpiexec, np_flag, str(RANKS), program], env=env)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
        check_summary(proftrace, path)
    with open(stats + ".table") as f:
        assert "Per-rank values: left out" in f.read()
    check_thicket(python, profile)
    check_thicket_stats(python, stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
