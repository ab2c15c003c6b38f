#!/usr/bin/env python3
"""Instructions per PROF_SCOPE with no session running, counted by callgrind.

usage: check_instructions.py PROGRAM MAX_EXTRA_INSTRUCTIONS

Runs PROGRAM under callgrind twice, collecting only inside one function each
time (loop_without_scope, loop_with_scope), and fails when the scope adds
more than MAX_EXTRA_INSTRUCTIONS instructions per iteration. Instruction
counts do not depend on the machine's speed, so this guards the hot path's
runtime-off cost on any machine.
"""
import os
import re
import subprocess
import sys
import tempfile

ITERATIONS = 100000


def instructions_in(program, function, workdir):
    out = os.path.join(workdir, function + ".callgrind")
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=" + function,
                    "--callgrind-out-file=" + out, program, str(ITERATIONS)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"no instruction total in {out}")


def main():
    program, limit = sys.argv[1], float(sys.argv[2])
    with tempfile.TemporaryDirectory() as workdir:
        plain = instructions_in(program, "loop_without_scope", workdir)
        scoped = instructions_in(program, "loop_with_scope", workdir)
    if plain < ITERATIONS:
        raise SystemExit(f"callgrind counted {plain} instructions for {ITERATIONS} iterations: the toggle missed")
    extra = (scoped - plain) / ITERATIONS
    print(f"loop alone: {plain / ITERATIONS:.2f} instructions/iteration; "
          f"with PROF_SCOPE (runtime off): {scoped / ITERATIONS:.2f}; the scope adds {extra:.2f} (limit {limit})")
    # The functions' prologues and epilogues differ by a few instructions in
    # all, spread over ITERATIONS: far below the 0.01 allowed here.
    if extra > limit + 0.01:
        raise SystemExit(f"FAIL: the runtime-off PROF_SCOPE adds {extra:.2f} instructions per iteration, over {limit}")


if __name__ == "__main__":
    main()
