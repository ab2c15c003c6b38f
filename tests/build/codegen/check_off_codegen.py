#!/usr/bin/env python3
"""What the macros leave in an instrumented function when nothing records.

usage: check_off_codegen.py OBJECT

OBJECT holds matvec_plain<0> and matvec_instrumented<0> (tests/build/codegen/
matvec_codegen.cpp, GCC -O2). The recording work of PROF_SCOPE_SHAPES,
PROF_FLOPS and PROF_SCOPE must be off the path a switched-off call runs:
in the function's `.cold` part where GCC splits one off, after its return
where it does not (a template's or an inline function's COMDAT copy). That
path, from the entry to the first `ret`, is the plain one's plus, per
macro, a state load, a branch and the scope's token:

- the hot body calls nothing and stores nothing into its stack frame (a
  shape list built before the state test did: work done while off, and a
  local whose address escapes);
- it is at most MAX_EXTRA_BYTES longer than the plain function;
- its inner loop is the plain one's, instruction for instruction.
"""
import re
import subprocess
import sys

MAX_EXTRA_BYTES = 128
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")


def functions(obj):
    text = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", obj], check=True, capture_output=True,
                          text=True).stdout
    funcs, name = {}, None
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if head:
            name = head.group(1)
            funcs[name] = []
            continue
        m = INSN.match(line)
        if m and name:
            funcs[name].append((int(m.group(1), 16), m.group(2), m.group(3).split("#")[0].strip()))
    return funcs


def find(funcs, prefix, cold=False):
    for name, insns in funcs.items():
        if name.startswith(prefix) and ("[clone .cold]" in name) == cold:
            return insns
    return None


def straight_path(insns):
    """The instructions from the entry to the first return: what runs when no branch is taken."""
    for i, (_, op, _) in enumerate(insns):
        if op.startswith("ret"):
            return insns[:i + 1]
    return insns


def size(insns):
    return insns[-1][0] - insns[0][0] if insns else 0


def inner_loop(insns):
    """Mnemonics of the shortest backward branch's loop."""
    best = None
    for addr, op, args in insns:
        if not op.startswith("j") or op == "jmp":
            continue
        target = re.match(r"([0-9a-f]+)", args)
        if not target:
            continue
        t = int(target.group(1), 16)
        if t < addr and (best is None or addr - t < best[1] - best[0]):
            best = (t, addr)
    if best is None:
        return []
    return [op for addr, op, _ in insns if best[0] <= addr <= best[1]]


def main():
    funcs = functions(sys.argv[1])
    plain = find(funcs, "void proftrace_bench::matvec_plain<0>")
    hot = find(funcs, "void proftrace_bench::matvec_instrumented<0>")
    if not plain or not hot:
        raise SystemExit(f"matvec_plain<0> or matvec_instrumented<0> not found in {sys.argv[1]}: {list(funcs)}")
    failures = []
    cold = find(funcs, "void proftrace_bench::matvec_instrumented<0>", cold=True) or []
    loop_plain, loop_hot = inner_loop(plain), inner_loop(hot)
    plain, hot = straight_path(plain), straight_path(hot)
    calls = [f"{a:x}: {op} {args}" for a, op, args in hot if op.startswith("call")]
    if calls:
        failures.append("the path a switched-off call runs calls out: " + "; ".join(calls))
    stores = [f"{a:x}: {op} {args}" for a, op, args in hot
              if op.startswith(("mov", "punpck")) and re.search(r",\s*-?(0x[0-9a-f]+)?\(%rsp\)$", args)]
    if stores:
        failures.append("the path a switched-off call runs stores into its frame: " + "; ".join(stores))
    extra = size(hot) - size(plain)
    split = f"a .cold part of {size(cold)} bytes" if cold else "no .cold part"
    print(f"entry to return: plain {size(plain)} bytes, instrumented {size(hot)} bytes (+{extra}); {split}")
    if extra > MAX_EXTRA_BYTES:
        failures.append(f"the path a switched-off call runs is {extra} bytes longer than the plain function (at most {MAX_EXTRA_BYTES})")
    if not loop_plain or loop_plain != loop_hot:
        failures.append(f"inner loops differ: plain {loop_plain}, instrumented {loop_hot}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
