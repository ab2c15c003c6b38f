#!/usr/bin/env python3
"""The MPI example end to end (mpi_example_test): four ranks under mpirun,
the cross-rank summary, then the merged timeline.

usage: check_mpi_example.py MPIEXEC NP_FLAG EXAMPLE PROFTRACE WORKDIR

Checks: four per-rank traces; `proftrace summary DIR` has every rank and the
view across them; `proftrace merge` writes a trace that `proftrace validate`
accepts, with one process per rank named "rank N (host)" in rank order, the
MPI_Sendrecv scopes with their bytes and peer, and, on the merged (aligned)
timeline, no rank's k-th exchange ending before its sender's began.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys


def main():
    mpiexec, np_flag, example, proftrace, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    traces = os.path.join(work, "traces")
    subprocess.run([mpiexec, np_flag, "4", example, traces], check=True)
    files = sorted(os.listdir(traces))
    assert len(files) == 4 and all(f.startswith(f"rank{i}_") for i, f in enumerate(files)), files

    summary = subprocess.run([proftrace, "summary", traces], check=True, capture_output=True, text=True).stdout
    for r in range(4):
        assert f"== rank {r}" in summary, summary
    assert "across 4 ranks" in summary and "MPI_Sendrecv" in summary, summary

    merged = os.path.join(work, "merged.pt.trace.json.gz")
    subprocess.run([proftrace, "merge", traces, "-o", merged], check=True)
    subprocess.run([proftrace, "validate", merged], check=True, stdout=subprocess.DEVNULL)
    with gzip.open(merged, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    hosts = sorted((pid, name) for pid, name in names.items() if "device" not in name)
    assert [n.split(" (")[0] for _, n in hosts] == [f"rank {r}" for r in range(4)], hosts
    rank_of = {pid: int(name.split()[1]) for pid, name in hosts}

    exchanges = {r: [] for r in range(4)}
    for e in events:
        if e.get("name") == "MPI_Sendrecv" and e.get("ph") == "X":
            r = rank_of[e["pid"]]
            assert e["args"]["bytes"] == 2 * 8 * (1 << 16), e
            assert e["args"]["peer"] == (r + 1) % 4, e
            exchanges[r].append((e["ts"], e["ts"] + e["dur"]))
    for r in range(4):
        exchanges[r].sort()
        assert len(exchanges[r]) == 3, (r, exchanges[r])  # the schedule's three active steps
    # Each rank's clock offset is off by at most half its measured round trip.
    half_round_trip_us = {}
    for r, name in enumerate(files):
        with open(os.path.join(traces, name)) as f:
            half_round_trip_us[r] = json.load(f)["clockAlignment"]["round_trip_ns"] / 2000.0
    for r in range(4):
        sender = (r + 3) % 4
        allowance = 2.0 + half_round_trip_us[r] + half_round_trip_us[sender]
        for k in range(3):
            start_of_send = exchanges[sender][k][0]
            end_of_receive = exchanges[r][k][1]
            assert end_of_receive + allowance >= start_of_send, (
                f"rank {r}'s exchange {k} ends {start_of_send - end_of_receive:.3f} us before rank {sender}'s began")
    # The same ranks as Perfetto traces: their rank and clock alignment travel
    # in the .pftrace, so merging them gives the same timeline.
    pftraces = os.path.join(work, "pftraces")
    os.makedirs(pftraces)
    for name in files:
        pftrace = os.path.join(pftraces, name.replace(".json", ".pftrace"))
        subprocess.run([proftrace, "convert", os.path.join(traces, name), pftrace], check=True, stdout=subprocess.DEVNULL)
    merged_pf = os.path.join(work, "merged_from_pftrace.json")
    subprocess.run([proftrace, "merge", pftraces, "-o", merged_pf], check=True, stdout=subprocess.DEVNULL)
    with open(merged_pf) as f:
        from_pf = json.load(f)["traceEvents"]
    names_pf = {e["pid"]: e["args"]["name"] for e in from_pf if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert names_pf == names, (names_pf, names)

    def slices(evs):
        return sorted((e["pid"], e["tid"], e["name"], round(e["ts"], 3), round(e["dur"], 3))
                      for e in evs if e.get("ph") == "X")

    assert slices(from_pf) == slices(events), "merging the .pftrace ranks gave another timeline"
    assert not [d for d in os.listdir(work) if d.startswith(".proftrace-merge")], os.listdir(work)
    print(f"ok: 4 traces, summary across ranks, merged trace of {len(events)} events with 4 rank processes, "
          f"the same from their .pftrace")


if __name__ == "__main__":
    main()
