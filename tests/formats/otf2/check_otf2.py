#!/usr/bin/env python3
"""Reads proftrace's OTF2 archives with otf2-print and with the `otf2`
Python reader (PyPI), as Vampir's users would, and compares them with the
JSON trace they came from.

usage:
  check_otf2.py session PROFTRACE VENV WORK WRITER
      WRITER (write_otf2_session) records one session and exports it to
      WORK/run.json and WORK/run.otf2. Checks, per location: Enter/Leave
      balanced, nested, in time order; the same scope names (ProfilerStep#N
      as the region ProfilerStep with its step N as a parameter), counts and
      durations (to the nanosecond: the clock's resolution) as the JSON's
      threads; the clock's realtime start from the trace's base time; the
      counters, FLOPs and memory totals as metrics. Then the command line:
      `proftrace convert` JSON -> .otf2 and .pftrace -> .otf2 give the same
      events, `proftrace merge DIR -o x.otf2` works, an .otf2 input is refused.
  check_otf2.py edges PROFTRACE VENV WORK
      A hand-written trace of the nesting walk's cases (overlap, zero-length
      scopes, scopes ending with their parent, equal scopes, steps, GPU
      streams): the exact event order per location.
  check_otf2.py mpi PROFTRACE VENV WORK MPIEXEC NP_FLAG EXAMPLE
      Four ranks of the MPI ring example merged to one archive: one process
      location group per rank, MPI send/receive pairs between neighbours, a
      receive never before its send on the aligned clock.

The virtualenv is created once in VENV and reused; where PyPI cannot be
reached the test is skipped (exit 77). otf2-print must print no warning or
error for any archive.
"""
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from cached_venv import SKIP, ensure_venv, venv_python  # noqa: E402


# Runs in the virtualenv: the archive as JSON (definitions and each location's events).
PROBE = r"""
import json, sys
import otf2
from otf2.events import Enter, Leave, MpiSend, MpiRecv, Metric, ParameterInt

with otf2.reader.open(sys.argv[1]) as trace:
    d = trace.definitions
    c = d.clock_properties
    out = {"clock": [c.timer_resolution, c.global_offset, c.trace_length, c.realtime_timestamp],
           "groups": {g.name: [str(g.location_group_type).split(".")[-1],
                               g.creating_location_group.name if g.creating_location_group else None]
                      for g in d.location_groups},
           "locations": {}, "regions": {r.name: [str(r.region_role).split(".")[-1], str(r.paradigm).split(".")[-1]]
                                         for r in d.regions},
           "metrics": sorted(m.name for m in d.metric_members),
           "comms": [cm.name for cm in d.comms]}
    keys = {}  # "group/name", "#ref" added where threads share a name
    names = [f"{l.group.name}/{l.name}" for l in d.locations]
    for l, name in zip(d.locations, names):
        keys[l] = name if names.count(name) == 1 else f"{name}#{l._ref}"
        out["locations"][keys[l]] = {"type": str(l.type).split(".")[-1], "group": l.group.name, "events": []}
    for location, e in trace.events:
        ev = out["locations"][keys[location]]["events"]
        if isinstance(e, Enter):
            ev.append(["enter", e.time, e.region.name])
        elif isinstance(e, Leave):
            ev.append(["leave", e.time, e.region.name])
        elif isinstance(e, ParameterInt):
            ev.append(["param", e.time, e.parameter.name, e.value])
        elif isinstance(e, Metric):
            ev.append(["metric", e.time, e.metric.members[0].name, float(e.values[0])])
        elif isinstance(e, MpiSend):
            ev.append(["send", e.time, e.receiver, e.msg_length])
        elif isinstance(e, MpiRecv):
            ev.append(["recv", e.time, e.sender, e.msg_length])
        else:
            ev.append([type(e).__name__, e.time])
    json.dump(out, sys.stdout)
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def otf2_print(anchor):
    """otf2-print reads the whole archive with no warning or error."""
    p = subprocess.run(["otf2-print", anchor], capture_output=True, text=True)
    assert p.returncode == 0, (anchor, p.stderr[-2000:])
    text = p.stdout + p.stderr
    for word in ("warning", "error"):
        assert word not in text.lower(), (anchor, [l for l in text.splitlines() if word in l.lower()][:5])
    return p.stdout


def probe(venv, anchor):
    otf2_print(anchor)
    return json.loads(run([venv_python(venv), "-c", PROBE, anchor]).stdout)


def check_nesting(archive):
    """Per location: times never go back, every leave closes the innermost enter, nothing left open."""
    for name, loc in archive["locations"].items():
        stack, last = [], None
        for e in loc["events"]:
            assert last is None or e[1] >= last, (name, e, last)
            last = e[1]
            if e[0] == "enter":
                stack.append(e[2])
            elif e[0] == "leave":
                assert stack and stack[-1] == e[2], (name, e, stack)
                stack.pop()
        assert not stack, (name, stack)


def scopes_per_location(archive):
    """Per location, the sorted (region, duration ns) of its scopes."""
    out = {}
    for name, loc in archive["locations"].items():
        stack, scopes = [], []
        for e in loc["events"]:
            if e[0] == "enter":
                stack.append(e)
            elif e[0] == "leave":
                enter = stack.pop()
                scopes.append((enter[2], e[1] - enter[1]))
        if scopes:
            out[name] = sorted(scopes)
    return out


def json_scopes(trace):
    """Per thread, the sorted (name, duration ns) of its "X" events, ProfilerStep#N as ProfilerStep."""
    threads = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            name = "ProfilerStep" if e["name"].startswith("ProfilerStep#") else e["name"]
            threads[(str(e["pid"]), str(e["tid"]))].append((name, round(e["dur"] * 1000)))
    return {k: sorted(v) for k, v in threads.items()}


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def same_scopes(archive, trace):
    """The multiset of per-thread scope lists is the same on both sides."""
    a = sorted(scopes_per_location(archive).values())
    j = sorted(json_scopes(trace).values())
    assert len(a) == len(j), (len(a), len(j))
    for x, y in zip(a, j):
        assert [n for n, _ in x] == [n for n, _ in y], (x[:5], y[:5])
        assert all(abs(dx - dy) <= 1 for (_, dx), (_, dy) in zip(x, y)), (x[:5], y[:5])


def check_session(proftrace, venv, work, writer):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run([writer, os.path.join(work, "run.json"), os.path.join(work, "run.otf2")])
    trace = load_json(os.path.join(work, "run.json"))
    archive = probe(venv, os.path.join(work, "run.otf2"))
    check_nesting(archive)
    same_scopes(archive, trace)
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    sampled = [e for e in trace["traceEvents"] if e.get("ph") == "C" or (e.get("ph") == "i" and e["name"] == "[memory]")]
    first = min(e["ts"] for e in xs + sampled)
    resolution, offset, length, realtime = archive["clock"]
    assert resolution == 10**9 and offset == 0 and length > 0, archive["clock"]
    assert abs(realtime - (trace["baseTimeNanoseconds"] + round(first * 1000))) <= 1, (realtime, first)
    steps = [e for loc in archive["locations"].values() for e in loc["events"] if e[0] == "param"]
    json_steps = sorted(int(e["name"].split("#")[1]) for e in xs if e["name"].startswith("ProfilerStep#"))
    assert sorted(e[3] for e in steps) == json_steps and json_steps, (steps, json_steps)
    assert archive["regions"]["ProfilerStep"][0] == "LOOP", archive["regions"]["ProfilerStep"]
    for metric in ("queue", "FLOPs", "Total Allocated"):
        assert metric in archive["metrics"], archive["metrics"]
    samples = collections.Counter(e[2] for loc in archive["locations"].values() for e in loc["events"] if e[0] == "metric")
    counters = [e for e in trace["traceEvents"] if e.get("ph") == "C" and e["name"] == "queue"]
    assert samples["queue"] == len(counters) > 0, (samples, len(counters))
    assert samples["FLOPs"] == sum(1 for e in xs if "flops" in e.get("args", {})) > 0, samples
    print(f"session: {sum(len(v) for v in scopes_per_location(archive).values())} scopes on "
          f"{len(archive['locations'])} locations, metrics {dict(samples)}")
    check_command_line(proftrace, venv, work, archive)


def check_command_line(proftrace, venv, work, archive):
    """convert from JSON and from Perfetto, merge, and an .otf2 input refused."""
    expected = sorted(scopes_per_location(archive).values())
    json_path = os.path.join(work, "run.json")
    for source in ("json", "pftrace"):
        src = json_path
        if source == "pftrace":
            src = os.path.join(work, "run.pftrace")
            run([proftrace, "convert", json_path, src])
        out = os.path.join(work, f"cli_{source}.otf2")
        run([proftrace, "convert", src, out])
        assert sorted(scopes_per_location(probe(venv, out)).values()) == expected, source
    ranks = os.path.join(work, "ranks")
    os.makedirs(ranks)
    shutil.copy(json_path, os.path.join(ranks, "rank0.pt.trace.json"))
    merged = os.path.join(work, "merged.otf2")
    run([proftrace, "merge", ranks, "-o", merged])
    assert sum(len(v) for v in scopes_per_location(probe(venv, merged)).values()) == sum(len(v) for v in expected)
    for cmd in (["summary", merged], ["convert", merged, os.path.join(work, "back.json")]):
        p = subprocess.run([proftrace] + cmd, capture_output=True, text=True)
        assert p.returncode == 1 and "is written only" in p.stderr, (cmd, p.returncode, p.stderr)
    p = subprocess.run([proftrace, "convert", json_path, os.path.join(work, "run.otf2.gz")], capture_output=True, text=True)
    assert p.returncode == 1 and "not compressed" in p.stderr, p.stderr
    print("command line: convert (json, pftrace), merge, refusals: ok")


def x(name, pid, tid, ts, dur, cat="user_annotation", args=None):
    e = {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


EDGE_EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "host"}},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "main"}},
    x("P", 7, 1, 0, 100),
    x("Q", 7, 1, 10, 140),   # outlives P: cut at 100
    x("R", 7, 1, 20, 0),     # zero-length
    x("S", 7, 1, 50, 50),    # ends with Q's cut end and P's end
    x("T", 7, 1, 100, 0),    # zero-length at P's end: after it
    x("ProfilerStep#7", 7, 1, 200, 100, args={"flops": 1000}),
    x("ProfilerStep#8", 7, 1, 300, 100),
    {"ph": "C", "name": "queue", "pid": 7, "tid": 1, "ts": 250, "args": {"queue": 3}},
    {"ph": "i", "name": "[memory]", "pid": 7, "tid": 1, "ts": 260, "s": "t",
     "args": {"Total Allocated": 64, "Total Reserved": 128, "Bytes": 64}},
    x("E", 7, 1, 500, 100),  # two equal scopes: the first in the file encloses
    x("E2", 7, 1, 500, 100),
    x("kernel_a", 0, "stream 7", 20, 30, cat="kernel"),
    x("omp parallel", 7, 2, 0, 10, cat="openmp"),
    x("MPI_Allreduce", 7, 2, 20, 10),
]

EDGE_EXPECTED = [
    ["enter", 0, "P"], ["enter", 10000, "Q"], ["enter", 20000, "R"], ["leave", 20000, "R"],
    ["enter", 50000, "S"], ["leave", 100000, "S"], ["leave", 100000, "Q"], ["leave", 100000, "P"],
    ["enter", 100000, "T"], ["leave", 100000, "T"],
    ["enter", 200000, "ProfilerStep"], ["param", 200000, "step", 7],
    ["metric", 250000, "queue", 3.0], ["metric", 260000, "Total Allocated", 64.0],
    ["metric", 260000, "Total Reserved", 128.0],
    ["metric", 300000, "FLOPs", 1000.0], ["leave", 300000, "ProfilerStep"],
    ["enter", 300000, "ProfilerStep"], ["param", 300000, "step", 8], ["leave", 400000, "ProfilerStep"],
    ["enter", 500000, "E"], ["enter", 500000, "E2"], ["leave", 600000, "E2"], ["leave", 600000, "E"],
]


def check_edges(proftrace, venv, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src = os.path.join(work, "edges.json")
    with open(src, "w") as f:
        json.dump({"baseTimeNanoseconds": 1700000000000000000, "traceEvents": EDGE_EVENTS}, f)
    out = os.path.join(work, "edges.otf2")
    run([proftrace, "convert", src, out])
    archive = probe(venv, out)
    check_nesting(archive)
    main = archive["locations"]["host/main"]
    assert main["events"] == EDGE_EXPECTED, json.dumps(main["events"])
    assert archive["clock"][3] == 1700000000000000000, archive["clock"]
    assert archive["groups"]["GPU 0"] == ["ACCELERATOR", "host"], archive["groups"]
    assert archive["groups"]["host"] == ["PROCESS", None], archive["groups"]
    # The Python reader names OTF2_LOCATION_TYPE_ACCELERATOR_STREAM by its older alias, GPU.
    assert archive["locations"]["GPU 0/stream 7"]["type"] in ("ACCELERATOR_STREAM", "GPU"), archive["locations"]
    regions = archive["regions"]
    assert regions["kernel_a"] == ["FUNCTION", "CUDA"] and regions["omp parallel"] == ["PARALLEL", "OPENMP"], regions
    assert regions["MPI_Allreduce"] == ["COLL_ALL2ALL", "MPI"] and regions["P"] == ["CODE", "USER"], regions
    print("edges: nesting walk, steps, metrics, GPU stream, roles: ok")


def check_mpi(proftrace, venv, work, mpiexec, np_flag, example):
    shutil.rmtree(work, ignore_errors=True)
    traces = os.path.join(work, "traces")
    subprocess.run([mpiexec, np_flag, "4", example, traces], check=True)
    merged = os.path.join(work, "job.otf2")
    run([proftrace, "merge", traces, "-o", merged])
    archive = probe(venv, merged)
    check_nesting(archive)
    processes = sorted(n for n, (kind, _) in archive["groups"].items() if kind == "PROCESS")
    assert [n.split(" (")[0] for n in processes] == [f"rank {r}" for r in range(4)], processes
    assert "MPI_COMM_WORLD" in archive["comms"], archive["comms"]
    assert archive["regions"]["MPI_Sendrecv"] == ["POINT2POINT", "MPI"], archive["regions"]["MPI_Sendrecv"]
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    for loc in archive["locations"].values():
        rank = int(loc["group"].split()[1])
        for e in loc["events"]:
            if e[0] == "send":
                sends[(rank, e[2])].append(e[1])
            elif e[0] == "recv":
                recvs[(e[2], rank)].append(e[1])
    assert sorted(sends) == sorted(recvs) == [(r, (r + 1) % 4) for r in range(4)], (sorted(sends), sorted(recvs))
    slack_ns = 200_000  # each rank's offset is measured to within its round trip; the ring's first exchange is tight
    for pair, times in sends.items():
        assert len(times) == len(recvs[pair]) == 3, (pair, times, recvs[pair])
        for sent, received in zip(sorted(times), sorted(recvs[pair])):
            assert received + slack_ns >= sent, (pair, sent, received)
    print(f"mpi: {len(processes)} ranks, {sum(len(t) for t in sends.values())} messages matched")


def main():
    mode, proftrace, venv, work = sys.argv[1:5]
    if shutil.which("otf2-print") is None:
        print("SKIP: otf2-print not installed (Debian: otf2-tools)")
        return SKIP
    if ensure_venv(venv, [["otf2"]], "otf2") is None:
        return SKIP
    if mode == "session":
        check_session(proftrace, venv, work, sys.argv[5])
    elif mode == "edges":
        check_edges(proftrace, venv, work)
    else:
        check_mpi(proftrace, venv, work, *sys.argv[5:8])
    return 0


if __name__ == "__main__":
    sys.exit(main())
