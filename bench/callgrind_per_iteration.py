#!/usr/bin/env python3
"""Instructions per inner-loop iteration of each benchmark case, from callgrind.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=cg.out \\
        ./build-bench/bench/proftrace_bench --benchmark_min_time=0.01
    python3 bench/callgrind_per_iteration.py cg.out

With --dump-instr=yes callgrind counts every executed instruction at its
address, so within one function the instructions of the hot inner loop are
the ones executed (about) as often as the most executed one. Their summed
count divided by that trip count is the instructions per iteration, loop
overhead included (3 for the empty loop: add, cmp, jne). Counts are
exclusive: an out-of-line call made from the loop is listed under
"calls" instead of being added in. Only functions whose name contains
BM_ or _batch are listed.
"""
import collections
import re
import sys


def parse(path):
    names = {}
    self_ir = collections.defaultdict(collections.Counter)  # fn -> address -> Ir
    calls = collections.defaultdict(list)  # fn -> [(callee, count)]
    fn = callee = None
    addr = line = 0
    after_calls = False
    calls_count = 0

    def name(spec):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", spec)
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1))

    def pos(tok, prev):
        if tok == "*":
            return prev
        if tok[0] in "+-":
            return prev + int(tok, 0)
        return int(tok, 0)

    with open(path) as f:
        for raw in f:
            l = raw.strip()
            if not l:
                continue
            if l.startswith("fn="):
                fn = name(l[3:])
            elif l.startswith("cfn="):
                callee = name(l[4:])
            elif l.startswith("calls="):
                after_calls = True
                calls_count = int(l[6:].split()[0])
            elif l[0] in "0123456789+-*":
                parts = l.split()
                addr = pos(parts[0], addr)
                if len(parts) > 2:
                    line = pos(parts[1], line)
                ir = int(parts[-1]) if len(parts) >= 2 else 0
                if after_calls:  # inclusive cost of a call: not this function's own
                    calls[fn].append((callee, calls_count))
                    after_calls = False
                else:
                    self_ir[fn][addr] += ir
    return self_ir, calls


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    self_ir, calls = parse(sys.argv[1])
    rows = []
    for fn, per_addr in self_ir.items():
        if not fn or not ("BM_" in fn or "_batch" in fn) or ".cold" in fn or "_GLOBAL_" in fn:
            continue
        trips = max(per_addr.values())
        if trips < 1000:  # a function that only calls the loop
            continue
        hot = [c for c in per_addr.values() if c >= 0.9 * trips]
        hot_calls = sorted({c for c, n in calls[fn] if n >= 0.9 * trips})
        rows.append((fn, trips, sum(hot) / trips, hot_calls))
    print(f"{'function':60s} {'iterations':>11s} {'instr/iter':>10s}  calls in the loop")
    for fn, trips, per, hot_calls in sorted(rows):
        print(f"{fn[:60]:60s} {trips:11d} {per:10.2f}  {', '.join(hot_calls) or '-'}")


if __name__ == "__main__":
    main()
