#!/usr/bin/env python3
"""Parses proftrace's .pftrace with Perfetto's own generated protobuf classes.

Converts a Kineto JSON trace with `proftrace convert`, then loads the file
with perfetto.protos.perfetto.trace.perfetto_trace_pb2.Trace.FromString (the
`perfetto` package from PyPI), which checks every field's number and wire
type against Perfetto's definitions, and checks: no field unknown to
Perfetto anywhere; every sequence's first packet clears its state and has a
REALTIME/BOOTTIME clock snapshot or (a thread's sequence) one that declares
its incremental clock 64 beside REALTIME; every event on REALTIME or on its
sequence's clock (deltas), with interned names that resolve, on tracks
(its own or its sequence's default) declared before use; as many BEGINs as
ENDs as "X" events.

usage: check_perfetto_proto.py PROFTRACE_CLI TRACE_JSON VENV_DIR [STREAM_WRITER]

STREAM_WRITER, a program that writes a trace a session streamed in
Perfetto's format (tests/formats/write_streamed_pftrace.cpp), is run and its file
checked the same way; its threads' slices, their times decoded from the
deltas, must equal the scopes it prints, as the session's aggregator saw
them.

The virtualenv is created once in VENV_DIR (the build tree) and reused; where
PyPI cannot be reached the test is skipped (exit 77) with a message.
"""
import collections
import decimal
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import pypi_venv  # noqa: E402

SKIP = pypi_venv.SKIP


def venv_python(venv: str) -> str:
    return pypi_venv.python_of(venv)


def ensure_venv(venv: str) -> bool:
    return pypi_venv.ensure_venv(venv, ["perfetto", "protobuf"], "perfetto")


# Runs in the virtualenv: prints what Perfetto's classes see, as JSON.
PROBE = r"""
import json, sys
from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

def unknown(msg, path, out):
    if len(UnknownFieldSet(msg)):
        out.append(path)
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        values = value if repeated else [value]
        for v in values:
            unknown(v, path + "." + field.name, out)

trace = Trace.FromString(open(sys.argv[1], "rb").read())
problems, unknowns, tracks = [], [], set()
# Per sequence, as trace_processor keeps it: interned names, the defaults
# (clock, track) and the sequence's own clocks (ids 64..127).
seqs = {}
out = {"packets": len(trace.packet), "begin": 0, "end": 0, "slice_names": [], "json_args": 0, "sequences": 0,
       "slices": [], "interned_values": 0}
open_slices = {}  # track -> [(name, begin ns)]

def fresh_state():
    return {"names": {}, "annotation_names": {}, "values": {}, "clock": 0, "track": 0, "clocks": {}}

def event_ns(i, p, st):  # the packet's timestamp on REALTIME, or None (a problem noted)
    clock = p.timestamp_clock_id or st["clock"] or 6
    if clock == 1:
        return p.timestamp
    c = st["clocks"].get(clock)
    if c is None:
        problems.append("packet %d: clock %d, neither REALTIME nor one of its sequence's" % (i, clock))
        return None
    delta = p.timestamp - (1 << 64) if p.timestamp >= 1 << 63 else p.timestamp
    c["value"] = c["value"] + delta if c["incremental"] else p.timestamp
    return c["value"] + c["to_realtime"]

for i, p in enumerate(trace.packet):
    unknown(p, "packet[%d]" % i, unknowns)
    seq = p.trusted_packet_sequence_id
    if seq == 0:
        problems.append("packet %d: no sequence" % i)
    if seq not in seqs:  # a sequence's first packet clears its state and places its clocks
        seqs[seq] = fresh_state()
        out["sequences"] += 1
        clocks = sorted(c.clock_id for c in p.clock_snapshot.clocks)
        if p.sequence_flags != 1 or clocks not in ([1, 6], [1, 64]):
            problems.append("first packet of sequence %d: flags %d, clocks %s" % (seq, p.sequence_flags, clocks))
    st = seqs[seq]
    if p.sequence_flags & 1:
        st["names"], st["annotation_names"], st["values"], st["clock"], st["track"] = {}, {}, {}, 0, 0
    if p.HasField("trace_packet_defaults"):
        d = p.trace_packet_defaults
        st["clock"] = d.timestamp_clock_id
        st["track"] = d.track_event_defaults.track_uuid
    if p.HasField("clock_snapshot"):
        clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
        for c in clocks.values():
            if 64 <= c.clock_id < 128:
                if 1 not in clocks or c.unit_multiplier_ns > 1:
                    problems.append("packet %d: sequence clock %d not placed on REALTIME in ns" % (i, c.clock_id))
                    continue
                st["clocks"][c.clock_id] = {"value": c.timestamp, "incremental": c.is_incremental,
                                            "to_realtime": clocks[1].timestamp - c.timestamp}
        continue  # as trace_processor: nothing else of a snapshot's packet is read
    for n in p.interned_data.event_names:
        st["names"][n.iid] = n.name
    for n in p.interned_data.debug_annotation_names:
        st["annotation_names"][n.iid] = n.name
    for n in p.interned_data.debug_annotation_string_values:
        st["values"][n.iid] = n.str
    if p.HasField("track_descriptor"):
        tracks.add(p.track_descriptor.uuid)
    if not p.HasField("timestamp"):
        continue
    ns = event_ns(i, p, st)
    if not p.HasField("track_event"):
        continue
    e = p.track_event
    if not (p.sequence_flags & 2):
        problems.append("packet %d: flags %d" % (i, p.sequence_flags))
    track = e.track_uuid if e.HasField("track_uuid") else st["track"]
    if track not in tracks:
        problems.append("packet %d: track %d used before its descriptor" % (i, track))
    if e.type == TrackEvent.TYPE_SLICE_BEGIN:
        out["begin"] += 1
        name = e.name if e.HasField("name") else st["names"].get(e.name_iid, "?")
        out["slice_names"].append(name)
        open_slices.setdefault(track, []).append((name, ns))
    if e.type == TrackEvent.TYPE_SLICE_END:
        out["end"] += 1
        if open_slices.get(track):
            name, begin = open_slices[track].pop()
            if ns is not None and begin is not None:
                out["slices"].append([name, begin, ns - begin])
    for a in e.debug_annotations:
        if a.name_iid not in st["annotation_names"]:
            problems.append("packet %d: annotation name %d not interned" % (i, a.name_iid))
        if a.HasField("string_value_iid"):
            if a.string_value_iid not in st["values"]:
                problems.append("packet %d: string value %d not interned" % (i, a.string_value_iid))
            out["interned_values"] += 1
        if a.HasField("legacy_json_value"):
            json.loads(a.legacy_json_value)
            out["json_args"] += 1
out["problems"] = problems
out["unknown_fields"] = unknowns[:10]
print(json.dumps(out))
"""


def probe_file(venv: str, pf: str) -> dict | None:
    probe = subprocess.run([venv_python(venv), "-c", PROBE, pf], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        print("Perfetto's classes could not read", pf, ":", probe.stderr[-4000:])
        return None
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    print("perfetto_trace_pb2 read", os.path.basename(pf), ":",
          json.dumps({k: v for k, v in seen.items() if k not in ("slice_names", "slices")}))
    if seen["problems"] or seen["unknown_fields"]:
        print("problems:", seen["problems"][:10], "fields unknown to Perfetto:", seen["unknown_fields"])
        return None
    return seen


def check_converted(cli: str, trace_json: str, venv: str, tmp: str) -> bool:
    with open(trace_json) as f:
        x_names = sorted(e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X")
    pf = os.path.join(tmp, "t.pftrace")
    conv = subprocess.run([cli, "convert", trace_json, pf], capture_output=True, text=True)
    if conv.returncode != 0:
        print("proftrace convert failed:", conv.stdout, conv.stderr)
        return False
    seen = probe_file(venv, pf)
    if seen is None:
        return False
    ok = True
    if seen["begin"] != len(x_names) or seen["end"] != len(x_names):
        print(f"{seen['begin']} BEGINs and {seen['end']} ENDs for {len(x_names)} X events")
        ok = False
    if sorted(seen["slice_names"]) != x_names:
        print("slice names differ:", sorted(seen["slice_names"]), x_names)
        ok = False
    if seen["json_args"] == 0:
        print("no legacy_json_value args (the trace has Input Dims arrays)")
        ok = False
    # Every "X" event a slice with its times (threads' from their deltas).
    got = collections.Counter(tuple(x) for x in seen["slices"])
    missing = collections.Counter(tuple(x) for x in json_slices(trace_json, tuple(x_names))) - got
    if missing:
        print("X events with no slice of the same name and times:", list(missing)[:4])
        ok = False
    return ok


def json_slices(path: str, names: tuple) -> list:
    """The JSON trace's "X" events named in `names` as [name, begin ns, dur ns]."""
    with open(path) as f:
        t = json.load(f, parse_float=decimal.Decimal)
    base = int(t.get("baseTimeNanoseconds", 0))
    return sorted([e["name"], base + int(e["ts"] * 1000), int(e["dur"] * 1000)]
                  for e in t["traceEvents"] if e.get("ph") == "X" and e["name"] in names)


def check_streamed(writer: str, venv: str, tmp: str) -> bool:
    pf = os.path.join(tmp, "streamed.pftrace")
    run = subprocess.run([writer, pf], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        print("the stream writer failed:", run.stdout, run.stderr)
        return False
    seen = probe_file(venv, pf)
    if seen is None:
        return False
    # the events', the closing counters' and each of the two threads' own
    ok = seen["begin"] == seen["end"] and seen["begin"] > 0 and seen["json_args"] > 0 and seen["sequences"] == 4
    if seen["interned_values"] < 20:  # each scope's call stack, interned (string_value_iid)
        print("call stacks by string_value_iid:", seen["interned_values"], "(20 or more expected)")
        ok = False
    for name in ("outer", "matmul", "ProfilerStep#1", "transfer"):
        if name not in seen["slice_names"]:
            print("no slice named", name)
            ok = False
    if not ok:
        print("streamed trace:", seen["begin"], "BEGINs,", seen["end"], "ENDs,", seen["json_args"], "JSON args,",
              seen["sequences"], "sequences (events, the closing counters and one per thread)")
    # The threads' scopes, their times decoded from deltas on each thread's
    # incremental clock, against the scopes as the session's aggregator saw
    # them (from the records, not from the file).
    names = ("outer", "matmul")
    want = sorted([w[1], int(w[2]), int(w[3])] for w in (line.split() for line in run.stdout.splitlines())
                  if len(w) == 4 and w[0] == "scope" and w[1] in names)
    got = sorted(s for s in seen["slices"] if s[0] in names)
    if len(want) != 20 or got != want:
        print("the threads' slices differ from the session's scopes:", got[:4], "against", want[:4])
        ok = False
    return ok


def main() -> int:
    cli, trace_json, venv = sys.argv[1], sys.argv[2], sys.argv[3]
    writer = sys.argv[4] if len(sys.argv) > 4 else None
    if not ensure_venv(venv):
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        ok = check_converted(cli, trace_json, venv, tmp)
        if writer:
            ok = check_streamed(writer, venv, tmp) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
