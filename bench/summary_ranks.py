#!/usr/bin/env python3
"""The offline path across ranks: `proftrace summary DIR` on R rank traces
of N scopes each, made with the library (proftrace_rank_trace), for R in
8, 16, 32 and 64: CPU time (user + system), wall time and peak memory of
the summary, with the traces in the page cache, and the traces' bytes.

    bench/summary_ranks.py BUILD_DIR WORK_DIR [--scopes 1000000] [--ranks 8,16,32,64]

Prints one Markdown table row per rank count (bench/README.md, "The job's
report"). WORK_DIR gets the traces (about 40 MB per rank at 1 M scopes);
it is removed at the end.
"""
import argparse
import os
import shutil
import subprocess
import sys


def make_traces(build, work, ranks, scopes):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for r in range(ranks):
        env = dict(os.environ, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE=str(ranks))
        subprocess.run([os.path.join(build, "bench", "proftrace_rank_trace"), str(scopes), work], env=env, check=True)
    return sum(os.path.getsize(os.path.join(work, f)) for f in os.listdir(work))


def timed_summary(build, work):
    """CPU seconds, wall seconds and peak RSS (MiB) of one `proftrace summary DIR`."""
    subprocess.run(["cat"] + [os.path.join(work, f) for f in os.listdir(work)], stdout=subprocess.DEVNULL, check=True)
    # GNU time: the summary's own figures (RUSAGE_CHILDREN's peak would be the trace makers').
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", os.path.join(build, "tools", "proftrace"), "summary",
                          work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True).stderr
    wall, user, system, kib = out.strip().splitlines()[-1].split()
    return float(user) + float(system), float(wall), int(kib) / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--scopes", type=int, default=1_000_000)
    ap.add_argument("--ranks", default="8,16,32,64")
    args = ap.parse_args()
    print("| ranks | events | trace bytes | summary CPU s | wall s | peak RSS MiB | CPU us per event |")
    print("|---|---|---|---|---|---|---|")
    for ranks in (int(r) for r in args.ranks.split(",")):
        size = make_traces(args.build, args.work, ranks, args.scopes)
        cpu, wall, rss = timed_summary(args.build, args.work)
        events = ranks * args.scopes
        print(f"| {ranks} | {events / 1e6:.0f} M | {size / 1e9:.2f} GB | {cpu:.1f} | {wall:.1f} | {rss:.0f} | "
              f"{cpu / events * 1e6:.3f} |", flush=True)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
