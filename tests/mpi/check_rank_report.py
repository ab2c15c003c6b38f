#!/usr/bin/env python3
"""The job's report across ranks (across_ranks) of a real MPI job
(rank_report.cpp), against the per-rank traces of the same run.

usage: check_rank_report.py MPIEXEC NP_FLAG NP PROGRAM PROFTRACE WORKDIR [MPIEXEC_FLAGS...]

1. traced: every rank writes a trace; rank 0's rank_averages().csv() equals,
   key by key, what `proftrace csv` finds in the NP traces (calls, total and
   self time summed, min / mean / max of one rank's total with their ranks,
   a rank without the key counting 0); the kernel, whose work grows with the
   rank, is slowest on the last rank with the imbalance the work implies.
2. profile: trace_format::none on every rank: no trace file anywhere (nor a
   spool), and the same report; again past PROFTRACE_RANK_VALUES_MAX (the
   figures only, no per-rank values, the table saying so).
3. chosen: trace_ranks "0,2": traces from ranks 0 and 2 only, every rank in
   the report.
4. uneven: rank 0 ends one trace more than the others; with
   PROFTRACE_NO_RANK_REDUCTION=1 (and PROFTRACE_NO_CLOCK_ALIGNMENT=1: start()
   and stop() align clocks collectively too) the job does not hang and the
   note says why.
"""
import csv
import io
import os
import re
import shutil
import subprocess
import sys

TIMEOUT = 240


def run_job(mpiexec, np_flag, np, flags, program, work, mode, env=None, name=None):
    out = os.path.join(work, name or mode)
    os.makedirs(out)
    spool = os.path.join(out, "spool")
    os.makedirs(spool)
    full_env = dict(os.environ, PROFTRACE_SPOOL_DIR=spool, **(env or {}))
    r = subprocess.run([mpiexec, np_flag, str(np)] + flags + [program, out, mode], env=full_env, text=True,
                       capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 0, (mode, r.stdout, r.stderr)
    assert os.listdir(spool) == [], (mode, os.listdir(spool))  # every spool removed, or none made
    return out, r.stdout


def job_rows(out):
    with open(os.path.join(out, "job.csv")) as f:
        return {row["key"]: row for row in csv.DictReader(f)}


def traces_of(out):
    d = os.path.join(out, "traces")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def per_rank_rows(proftrace, out, np):
    """{key: {rank: (calls, total_ns, self_ns)}} from each rank's trace, by `proftrace csv --numbers`."""
    rows = {}
    for name in traces_of(out):
        rank = int(re.match(r"rank(\d+)_", name).group(1))
        text = subprocess.run([proftrace, "csv", "--numbers", os.path.join(out, "traces", name)], check=True,
                              capture_output=True, text=True).stdout
        for row in csv.DictReader(io.StringIO(text)):
            ns = lambda column: round(float(row[column]) * 1000)
            rows.setdefault(row["name"], {})[rank] = (int(row["count"]), ns("cpu_total_us"), ns("self_cpu_us"))
    return rows


def check_against_traces(job, traced, np):
    assert set(job) == set(traced), (sorted(job), sorted(traced))
    for key, ranks in traced.items():
        row = job[key]
        totals = [ranks.get(r, (0, 0, 0))[1] for r in range(np)]
        calls = sum(c for c, _, _ in ranks.values())
        assert int(row["calls"]) == calls, (key, row["calls"], calls)
        slack = calls  # a nanosecond per call: the trace's microseconds carry three decimals
        for column, expected in (("cpu_time_total_ns", sum(totals)),
                                 ("self_cpu_time_total_ns", sum(s for _, _, s in ranks.values())),
                                 ("min_ns", min(totals)), ("max_ns", max(totals)),
                                 ("mean_ns", sum(totals) / np)):
            assert abs(float(row[column]) - expected) <= slack, (key, column, row[column], expected)
        assert int(row["ranks"]) == np and int(row["ranks_with_calls"]) == len(ranks), (key, row)
        for column, value in (("min_rank", min(totals)), ("max_rank", max(totals))):
            # Ranks whose figure is the extreme, within the rounding: the report names one of them.
            candidates = [r for r in range(np) if abs(totals[r] - value) <= slack]
            assert int(row[column]) in candidates, (key, column, row[column], candidates, totals)


def check_kernel(job, np):
    kernel = job["kernel"]
    assert int(kernel["max_rank"]) == np - 1 and int(kernel["min_rank"]) == 0, kernel
    expected = (np - 1) / (np + 1)  # rank r waits (r + 1) * 10 ms: max / mean - 1
    assert abs(float(kernel["imbalance"]) - expected) < 0.08, (kernel["imbalance"], expected)
    even = job["even_ranks_only"]
    assert int(even["min_ns"]) == 0 and int(even["min_rank"]) == 1, even  # rank 1 has none: it counts 0
    assert int(even["ranks_with_calls"]) == (np + 1) // 2, even


def main():
    mpiexec, np_flag, np, program, proftrace, work = sys.argv[1:7]
    flags = sys.argv[7:]
    np = int(np)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    out, _ = run_job(mpiexec, np_flag, np, flags, program, work, "traced")
    assert len(traces_of(out)) == np, traces_of(out)
    job = job_rows(out)
    check_against_traces(job, per_rank_rows(proftrace, out, np), np)
    check_kernel(job, np)

    out, stdout = run_job(mpiexec, np_flag, np, flags, program, work, "profile")
    assert traces_of(out) == [], traces_of(out)
    job = job_rows(out)
    check_kernel(job, np)
    assert int(job["kernel"]["calls"]) == 3 * np and "kernel" in stdout, stdout

    # Past PROFTRACE_RANK_VALUES_MAX ranks the report keeps the figures only.
    out, stdout = run_job(mpiexec, np_flag, np, flags, program, work, "profile", {"PROFTRACE_RANK_VALUES_MAX": "2"},
                          "profile_figures_only")
    assert "PROFTRACE_RANK_VALUES_MAX=2" in stdout, stdout
    check_kernel(job_rows(out), np)

    out, _ = run_job(mpiexec, np_flag, np, flags, program, work, "chosen")
    assert [int(re.match(r"rank(\d+)_", t).group(1)) for t in traces_of(out)] == [0, 2], traces_of(out)
    job = job_rows(out)
    check_kernel(job, np)
    assert all(int(row["ranks"]) == np for row in job.values()), job

    out, stdout = run_job(mpiexec, np_flag, np, flags, program, work, "uneven", {"PROFTRACE_NO_RANK_REDUCTION": "1", "PROFTRACE_NO_CLOCK_ALIGNMENT": "1"})
    assert "PROFTRACE_NO_RANK_REDUCTION" in stdout, stdout
    print(f"rank report at {np} ranks: equal to the traces, kernel imbalance, profile-only, trace_ranks, escape: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
