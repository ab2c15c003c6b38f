"""Runs the C11 program (tests/c_api/program.c) or the Fortran one into a
fresh directory and checks its one trace: names, nesting, steps, args."""
import glob
import json
import os
import subprocess
import sys
import tempfile


def main():
    program, kind = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([program, d], capture_output=True, text=True, timeout=120)
        sys.stderr.write(r.stderr)
        assert r.returncode == 0, f"exit {r.returncode}"
        files = glob.glob(os.path.join(d, "*.json"))
        assert len(files) == 1, files
        events = json.load(open(files[0]))["traceEvents"]
    by_name = {}
    for e in events:
        if e.get("ph") == "X":
            by_name.setdefault(e["name"], []).append(e)
    steps = sorted(n for n in by_name if n.startswith("ProfilerStep#"))
    assert steps == [f"ProfilerStep#{i}" for i in range(4)], steps

    def inside(inner, outer):
        return any(o["tid"] == inner["tid"] and o["ts"] <= inner["ts"] and
                   inner["ts"] + inner["dur"] <= o["ts"] + o["dur"] + 0.002 for o in outer)

    if kind == "c":
        assert len(by_name["solve"]) == 4, by_name.keys()
        assert len(by_name["inner"]) == 4
        assert len(by_name["kernel 0"]) == 2 and len(by_name["kernel 1"]) == 2
        for k in by_name["kernel 1"]:
            assert inside(k, by_name["inner"]) and k["args"]["i"] % 2 == 1
            assert k["args"]["scale"] == 0.5 and k["args"]["solver"] == "cg" and k["args"]["flops"] == 48
        for s in by_name["solve"]:
            assert inside(s, by_name[steps[0]] + by_name[steps[1]] + by_name[steps[2]] + by_name[steps[3]])
        assert sum(1 for e in events if e.get("name") == "iteration done") == 4
        assert sum(1 for e in events if e.get("ph") == "C" and e.get("name") == "iteration") == 4
    else:  # fortran
        assert len(by_name["solve"]) == 4, by_name.keys()
        assert len(by_name["kernel"]) == 4
        for k in by_name["kernel"]:
            assert inside(k, by_name["solve"])
            assert k["args"]["flops"] == 2 * 8 * 8 * 8
        its = sorted(s["args"]["it"] for s in by_name["solve"])
        assert its == [0, 1, 2, 3], its
        for s in by_name["solve"]:
            assert s["args"]["method"] == "jacobi" and s["args"]["tolerance"] == 1e-6, s["args"]
            # every kind through one proftrace_arg; another type is named as unrecorded
            assert s["args"]["relaxation"] == 0.5 and s["args"]["sweeps"] == 3, s["args"]
            assert s["args"]["converged"] == (1 if s["args"]["it"] == 4 else 0), s["args"]
            assert "does not record" in s["args"]["shift"], s["args"]
        assert sum(1 for e in events if e.get("name") == "iteration done") == 4
        assert sum(1 for e in events if e.get("ph") == "C" and e.get("name") == "residual") == 4
    print("ok")


main()
