#!/usr/bin/env python3
"""How much a SIGKILL loses: the README's "Killed or crashed" bound, measured.

Starts proftrace_kill_victim (one scope every 50 us), kills it with SIGKILL
at a random moment 0.3-0.8 s into its run, and reads the spool it left: the
age of the newest event on disk when the kill landed (kill time minus the
end of the last written event, both Unix time) is what the kill lost. Also
counts spools that are not valid JSON as left (a kill inside a flush's own
write; `proftrace validate --repair` recovers them). With --load N, N busy
processes compete for the CPUs meanwhile.

  python3 bench/kill_loss.py BUILD_DIR [--kills 40] [--period-ms 100] [--load 0]
"""
import argparse
import glob
import json
import multiprocessing
import os
import random
import signal
import subprocess
import tempfile
import time


def spin():
    while True:
        pass


def one_kill(victim, period_ms):
    with tempfile.TemporaryDirectory() as spool:
        env = dict(os.environ, PROFTRACE_SPOOL_DIR=spool, PROFTRACE_DISABLE_CUDA="1")
        proc = subprocess.Popen([victim, str(period_ms)], stdout=subprocess.PIPE, env=env)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(random.uniform(0.3, 0.8))
        killed_at_ns = time.time_ns()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        files = glob.glob(os.path.join(spool, "*.part"))
        assert len(files) == 1, files
        try:
            with open(files[0]) as f:
                trace = json.load(f)
        except ValueError:
            return None
        base_ns = trace["baseTimeNanoseconds"]
        ends = [e["ts"] + e.get("dur", 0) for e in trace["traceEvents"] if e.get("ph") == "X"]
        newest_ns = base_ns + max(ends) * 1000.0
        return (killed_at_ns - newest_ns) / 1e6  # ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--period-ms", type=int, default=100)
    ap.add_argument("--load", type=int, default=0, help="busy processes competing for the CPUs")
    args = ap.parse_args()
    victim = os.path.join(args.build_dir, "bench", "proftrace_kill_victim")
    hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for h in hogs:
        h.start()
    try:
        ages, invalid = [], 0
        for _ in range(args.kills):
            age = one_kill(victim, args.period_ms)
            if age is None:
                invalid += 1
            else:
                ages.append(age)
    finally:
        for h in hogs:
            h.terminate()
    ages.sort()
    print(f"flush period {args.period_ms} ms, load {args.load}, {args.kills} kills: "
          f"lost age median {ages[len(ages) // 2]:.1f} ms, worst {ages[-1]:.1f} ms "
          f"({ages[-1] / args.period_ms:.2f} periods); spool not valid JSON after {invalid} kills")


if __name__ == "__main__":
    main()
