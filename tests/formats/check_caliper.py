#!/usr/bin/env python3
"""Hatchet and Thicket (LLNL) read proftrace's Caliper profiles (.cali.json).

usage: check_caliper.py SESSION PROFTRACE VENV_DIR WORK_DIR [MPIEXEC NP_FLAG MPI_RING]

SESSION is caliper_session (tests/formats/caliper_session.cpp). Checks:
- hatchet.GraphFrame.from_caliper loads a session's profile with the call
  tree, calls and inclusive times of the session's table grouped by stack
  (threads summed per call path), and the session's metadata;
- `proftrace convert run.json x.cali.json` gives the same profile, and a
  .cali.json given as a trace is refused with a clear message;
- thicket.Thicket.from_caliper loads four runs (two versions x two sizes,
  set with add_metadata) and groups them by that metadata;
- with MPIEXEC (instead): a 2-rank mpirun of MPI_RING merged to
  job.cali.json, which Hatchet loads with one row per node and rank.
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

# Runs in the virtualenv: what Hatchet sees of each profile, as JSON.
HATCHET_PROBE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import hatchet as ht
out = {}
for profile in sys.argv[1:]:
    gf = ht.GraphFrame.from_caliper(profile)
    # From the roots down: this reader links children, not parents (Node.path() is the node alone).
    paths, todo = {}, [(root, root.frame["name"]) for root in gf.graph.roots]
    while todo:
        node, path = todo.pop()
        paths[node] = path
        todo.extend((c, path + ";" + c.frame["name"]) for c in node.children)
    rows = []
    for r in gf.dataframe.reset_index().to_dict("records"):
        rows.append({"path": paths[r["node"]], "rank": int(r.get("rank", 0)), "count": float(r["count"]),
                     "inc": float(r["time (inc)"])})
    out[profile] = {"rows": rows, "metadata": {k: v for k, v in gf.metadata.items() if isinstance(v, (str, int, float))},
                 "inc_metrics": gf.inc_metrics, "exc_metrics": gf.exc_metrics}
print(json.dumps(out))
"""

THICKET_PROBE = r"""
import json, sys, warnings, io, contextlib
warnings.simplefilter("ignore")
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import thicket as th
    tk = th.Thicket.from_caliper(sys.argv[1:])
    by_version = tk.groupby(["version"])
    by_both = tk.groupby(["version", "problem_size"])
print(json.dumps({
    "profiles": len(tk.profile),
    "versions": sorted(str(k[0] if isinstance(k, tuple) else k) for k in by_version.keys()),
    "per_version": sorted(len(t.profile) for t in by_version.values()),
    "groups": sorted(str(k) for k in by_both.keys()),
    "nodes": sorted({n.frame["name"] for n in tk.graph.traverse()}),
}))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def probe(python, script, args):
    p = run([python, "-c", script] + args)
    if p.returncode != 0:
        raise SystemExit(f"the reader failed on {args}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# The table's rows by call path of names: two scopes of one name at two
# lines are two frames there ("file(line): name"), one node in the profile.
def read_table(path):
    table = {}
    with open(path) as f:
        for line in f:
            stack, count, ns = line.rstrip("\n").split("\t")
            calls, seconds = table.get(stack, (0, 0.0))
            table[stack] = (calls + int(count), seconds + int(ns) / 1e9)
    return table


def check_against_table(seen, table, what):
    rows = {r["path"]: r for r in seen["rows"] if r["rank"] == 0}
    assert set(rows) == set(table), f"{what}: Hatchet's paths {sorted(rows)} != the table's {sorted(table)}"
    for path, (count, seconds) in table.items():
        r = rows[path]
        assert r["count"] == count, f"{what}: {path}: {r['count']} calls, the table {count}"
        assert abs(r["inc"] - seconds) <= 1e-9 * count + 1e-6 * seconds, f"{what}: {path}: {r['inc']} s, table {seconds} s"


def check_sessions(session, proftrace, python, work):
    runs = {}
    for version in ("v1", "v2"):
        for size in (64, 128):
            out = os.path.join(work, f"{version}_{size}")
            os.makedirs(out)
            p = run([session, out, version, str(size)])
            assert p.returncode == 0, p.stderr
            runs[(version, size)] = out
    first = runs[("v1", 64)]
    converted = os.path.join(first, "converted.cali.json")
    p = run([proftrace, "convert", os.path.join(first, "run.json"), converted])
    assert p.returncode == 0, p.stderr
    profile = os.path.join(first, "run.cali.json")
    seen = probe(python, HATCHET_PROBE, [profile, converted])
    table = read_table(os.path.join(first, "table.tsv"))
    assert len(table) >= 5 and table["main;worker"][0] == 2, table  # two threads' calls of one path: one row
    check_against_table(seen[profile], table, "export_profile")
    check_against_table(seen[converted], table, "proftrace convert")
    meta = seen[profile]["metadata"]
    assert meta.get("version") == "v1" and meta.get("problem_size") == 64, meta
    for key in ("launchdate", "user", "hostname", "cluster", "cmdline", "proftrace.version", "mpi.world.size"):
        assert key in meta, (key, meta)
    assert seen[profile]["inc_metrics"] == ["time (inc)"], seen[profile]["inc_metrics"]
    refused = run([proftrace, "summary", profile])
    assert refused.returncode == 1 and "never read back" in refused.stderr, (refused.returncode, refused.stderr)
    tk = probe(python, THICKET_PROBE, [os.path.join(d, "run.cali.json") for d in runs.values()])
    assert tk["profiles"] == 4 and tk["versions"] == ["v1", "v2"] and tk["per_version"] == [2, 2], tk
    assert len(tk["groups"]) == 4 and {"main", "worker", "solve", "smooth"} <= set(tk["nodes"]), tk
    print(f"Hatchet: {len(table)} call paths as the table; Thicket: 4 runs in {len(tk['groups'])} groups")


def check_mpi(mpiexec, np_flag, ring, proftrace, python, work):
    traces = os.path.join(work, "mpi")
    p = run([mpiexec, np_flag, "2", ring, traces])
    assert p.returncode == 0, p.stdout + p.stderr
    job = os.path.join(work, "job.cali.json")
    p = run([proftrace, "merge", traces, "-o", job])
    assert p.returncode == 0, p.stderr
    with open(job) as f:
        raw = json.load(f)
    assert len(raw["data"]) == 2 * len(raw["nodes"]), (len(raw["data"]), len(raw["nodes"]))
    seen = probe(python, HATCHET_PROBE, [job])[job]
    ranks = sorted({r["rank"] for r in seen["rows"]})
    assert ranks == [0, 1], ranks
    compute = [r for r in seen["rows"] if r["path"].endswith("compute")]
    assert sorted(r["rank"] for r in compute) == [0, 1] and all(r["count"] == 3 for r in compute), compute
    assert seen["metadata"].get("mpi.world.size") == 2 and seen["metadata"].get("hostname"), seen["metadata"]
    print(f"Hatchet: the merged 2-rank job, {len(raw['nodes'])} nodes x 2 ranks")


def main():
    session, proftrace, venv, work = sys.argv[1:5]
    python = ensure_venv(venv, [["llnl-hatchet", "llnl-thicket"]], "llnl-hatchet and llnl-thicket")
    if python is None:
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if len(sys.argv) > 7:  # the MPI test: the merged job only
        check_mpi(*sys.argv[5:8], proftrace, python, work)
    else:
        check_sessions(session, proftrace, python, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
