"""PROFTRACE_CONFIG on a program with macros and no session code
(tests/c_api/env_program.cpp): the trace is written, the table printed to
stderr, a bad key named with the program running unprofiled, and a program
that starts its own session takes over from the environment's."""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

program = sys.argv[1]


def run(config, *args):
    env = dict(os.environ, PROFTRACE_CONFIG=config)
    r = subprocess.run([program, *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r


def names(path):
    return [e.get("name") for e in json.load(open(path))["traceEvents"]]


with tempfile.TemporaryDirectory() as d:
    r = run(f"out={d},table")
    files = glob.glob(os.path.join(d, "*.pt.trace.json"))
    assert len(files) == 1, os.listdir(d)
    assert names(files[0]).count("env work") == 6
    assert "env work" in r.stderr and "Self CPU" in r.stderr, r.stderr
    assert json.load(open(files[0]))["proftrace"]["lost_events_total"] == 0
    assert "Lost events" not in r.stderr, r.stderr

# A proftrace_start session never stopped: stopped at exit as
# proftrace_stop would, its trace written and its table printed.
with tempfile.TemporaryDirectory() as d:
    r = run("", "c-start", d)
    files = glob.glob(os.path.join(d, "*.pt.trace.json"))
    assert len(files) == 1, os.listdir(d)
    assert names(files[0]).count("c scope") == 1
    assert "c scope" in r.stderr and "Self CPU" in r.stderr, r.stderr

# proftrace_stop() stops the session proftrace_start started, never the
# environment's: that one records on until the exit.
with tempfile.TemporaryDirectory() as d:
    run(f"out={d}", "c-stop")
    files = glob.glob(os.path.join(d, "*.pt.trace.json"))
    assert len(files) == 1, os.listdir(d)
    assert names(files[0]).count("env work") == 9, names(files[0]).count("env work")

# Blanks around '=' are trimmed; a schedule without active, or whose cycle
# overflows 64 bits, is refused with a message that says so.
with tempfile.TemporaryDirectory() as d:
    run(f" out = {d} , table = 1 ")
    assert len(glob.glob(os.path.join(d, "*.pt.trace.json"))) == 1, os.listdir(d)
    for bad, says in (("wait=1", "a schedule needs active=N with N >= 1"),
                      ("wait=9223372036854775806,warmup=1,active=1", "overflows a 64-bit step count")):
        r = run(f"out={d}/bad,{bad}")
        assert says in r.stderr and "runs unprofiled" in r.stderr, r.stderr
        assert not os.path.exists(f"{d}/bad"), os.listdir(d)

# A C API step still open at exit ends at the stop, as recorded: no event is
# reported lost (its end was once counted as unattached).
with tempfile.TemporaryDirectory() as d:
    r = run(f"out={d},table", "c-step")
    files = glob.glob(os.path.join(d, "*.pt.trace.json"))
    assert len(files) == 1, os.listdir(d)
    trace = json.load(open(files[0]))
    assert trace["proftrace"]["lost_events_total"] == 0, trace["proftrace"]
    assert "Lost events" not in r.stderr, r.stderr

with tempfile.TemporaryDirectory() as d:
    run(f"out={d},format=pftrace,wait=1,warmup=1,active=2,repeat=1")
    files = glob.glob(os.path.join(d, "*.pftrace"))
    assert len(files) == 1, os.listdir(d)

# Each compressed format: one file by its suffix, compressed by it. (The
# content is decoded in pftrace_session_test; a .pftrace.* holds Perfetto's
# bytes, whose first is a Trace.packet key, 0x0a.)
magic = {".gz": b"\x1f\x8b", ".zst": b"\x28\xb5\x2f\xfd"}
for fmt in ("json.gz", "json.zst", "pftrace.gz", "pftrace.zst"):
    with tempfile.TemporaryDirectory() as d:
        run(f"out={d},format={fmt}")
        files = glob.glob(os.path.join(d, "*.pt.trace." + fmt))
        assert len(files) == 1, (fmt, os.listdir(d))
        head = open(files[0], "rb").read(4)
        assert head.startswith(magic["." + fmt.split(".")[1]]), (fmt, head)
        if fmt == "pftrace.gz":
            assert gzip.open(files[0]).read(1) == b"\x0a", fmt

with tempfile.TemporaryDirectory() as d:
    for bad, key in ((f"out={d},tabel", "unknown key 'tabel'"), (f"out={d},active=two", "key 'active'"),
                     (f"out={d},format=xml", "key 'format'")):
        r = run(bad)
        assert key in r.stderr and "runs unprofiled" in r.stderr, r.stderr
        assert r.stderr.count("proftrace") == 1, r.stderr  # one message
    assert os.listdir(d) == [], os.listdir(d)

with tempfile.TemporaryDirectory() as d:
    r = run(f"out={d}", "own")
    assert "takes over" in r.stderr, r.stderr
    assert "own rows: 1" in r.stdout, r.stdout
    files = glob.glob(os.path.join(d, "*.pt.trace.json"))
    assert len(files) == 1, os.listdir(d)
    assert names(files[0]).count("env work") == 6

print("ok")
