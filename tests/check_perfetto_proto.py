#!/usr/bin/env python3
"""Parses proftrace's .pftrace with Perfetto's own generated protobuf classes.

Converts a Kineto JSON trace with `proftrace convert`, then loads the file
with perfetto.protos.perfetto.trace.perfetto_trace_pb2.Trace.FromString (the
`perfetto` package from PyPI), which checks every field's number and wire
type against Perfetto's definitions, and checks: no field unknown to
Perfetto anywhere, one sequence, state cleared and a REALTIME/BOOTTIME clock
snapshot first, every event on the REALTIME clock with interned names that
resolve, tracks declared before use, as many BEGINs as ENDs as "X" events.

usage: check_perfetto_proto.py PROFTRACE_CLI TRACE_JSON VENV_DIR [STREAM_WRITER]

STREAM_WRITER, a program that writes a trace a session streamed in
Perfetto's format (tests/write_streamed_pftrace.cpp), is run and its file
checked the same way (its slices then pair BEGIN with END, with no "X"
events to compare to).

The virtualenv is created once in VENV_DIR (the build tree) and reused; where
PyPI cannot be reached the test is skipped (exit 77) with a message.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv: str) -> bool:
    stamp = os.path.join(venv, ".proftrace-perfetto-ready")
    if os.path.exists(stamp):
        return True
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if made.returncode != 0:
        print("SKIP: cannot create a virtualenv:", made.stderr.strip()[-400:])
        return False
    pip = [venv_python(venv), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--timeout", "20",
           "perfetto", "protobuf"]
    try:
        done = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        shutil.rmtree(venv, ignore_errors=True)
        print(f"SKIP: installing perfetto from PyPI timed out ({e.timeout} s)")
        return False
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        print("SKIP: perfetto could not be installed from PyPI (unreachable?):", done.stderr.strip()[-400:])
        return False
    open(stamp, "w").close()
    return True


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
names, annotation_names = {}, {}  # per sequence: interning is scoped to one
out = {"packets": len(trace.packet), "begin": 0, "end": 0, "slice_names": [], "json_args": 0, "sequences": 0}
for i, p in enumerate(trace.packet):
    unknown(p, "packet[%d]" % i, unknowns)
    seq = p.trusted_packet_sequence_id
    if seq == 0:
        problems.append("packet %d: no sequence" % i)
    if seq not in names:  # a sequence's first packet clears its state and places the clocks
        names[seq], annotation_names[seq] = {}, {}
        out["sequences"] += 1
        clocks = sorted(c.clock_id for c in p.clock_snapshot.clocks)
        if p.sequence_flags != 1 or clocks != [1, 6]:
            problems.append("first packet of sequence %d: flags %d, clocks %s" % (seq, p.sequence_flags, clocks))
    for n in p.interned_data.event_names:
        names[seq][n.iid] = n.name
    for n in p.interned_data.debug_annotation_names:
        annotation_names[seq][n.iid] = n.name
    if p.HasField("track_descriptor"):
        tracks.add(p.track_descriptor.uuid)
    if not p.HasField("track_event"):
        continue
    e = p.track_event
    if p.timestamp_clock_id != 1 or not (p.sequence_flags & 2):
        problems.append("packet %d: clock %d flags %d" % (i, p.timestamp_clock_id, p.sequence_flags))
    if e.track_uuid not in tracks:
        problems.append("packet %d: track %d used before its descriptor" % (i, e.track_uuid))
    if e.type == TrackEvent.TYPE_SLICE_BEGIN:
        out["begin"] += 1
        out["slice_names"].append(names[seq].get(e.name_iid, "?"))
    if e.type == TrackEvent.TYPE_SLICE_END:
        out["end"] += 1
    for a in e.debug_annotations:
        if a.name_iid not in annotation_names[seq]:
            problems.append("packet %d: annotation name %d not interned" % (i, a.name_iid))
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
          json.dumps({k: v for k, v in seen.items() if k != "slice_names"}))
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
    return ok


def check_streamed(writer: str, venv: str, tmp: str) -> bool:
    pf = os.path.join(tmp, "streamed.pftrace")
    run = subprocess.run([writer, pf], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        print("the stream writer failed:", run.stdout, run.stderr)
        return False
    seen = probe_file(venv, pf)
    if seen is None:
        return False
    ok = seen["begin"] == seen["end"] and seen["begin"] > 0 and seen["json_args"] > 0 and seen["sequences"] == 2
    for name in ("outer", "matmul", "ProfilerStep#1", "transfer"):
        if name not in seen["slice_names"]:
            print("no slice named", name)
            ok = False
    if not ok:
        print("streamed trace:", seen["begin"], "BEGINs,", seen["end"], "ENDs,", seen["json_args"], "JSON args,",
              seen["sequences"], "sequences (events and the closing counters)")
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
