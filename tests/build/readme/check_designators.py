#!/usr/bin/env python3
"""Designated initializers in the documentation follow declaration order.

C++20 rejects `{.b = 1, .a = 2}` when `a` is declared before `b`, so a user
who copies an example whose designators are out of order meets a compile
error. The READMEs' C++ blocks are compiled (check_code_blocks.py); this
check covers the rest: prose, shell-less snippets and the usage comments of
the public headers.

It reads every struct of include/proftrace (member names in declaration
order), then every brace list opened by `{.name` (and PROF_CONV( /
PROF_CONV_BACKWARD(, whose arguments are conv_params designators) in the
given Markdown files and in the comments of the given headers. A list whose
designators all belong to some struct must follow that struct's order.
Before it reads anything, it checks itself on a list out of order (a
control): if that were not reported, the check would prove nothing.

usage: check_designators.py INCLUDE_DIR FILE...   (exit 0: all in order)
(every header under INCLUDE_DIR is checked as well as the FILEs)
"""
import os
import re
import sys

IDENT = r"[A-Za-z_]\w*"


def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", " ", code)


def structs(include_dir):
    """name -> [member, ...] in declaration order, for every struct in the headers."""
    found = {}
    for root, _, files in os.walk(include_dir):
        for name in files:
            if not name.endswith((".hpp", ".h")):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                code = strip_comments(f.read())
            for m in re.finditer(r"\bstruct\s+(" + IDENT + r")\s*(?::[^{;]*)?\{", code):
                depth, i, start = 1, m.end(), m.end()
                while i < len(code) and depth:
                    depth += {"{": 1, "}": -1}.get(code[i], 0)
                    i += 1
                body = code[start:i - 1]
                # Statements at depth 0 of the body: drop nested braces' contents.
                flat, d = [], 0
                for ch in body:
                    if ch == "{":
                        d += 1
                        flat.append("{")
                    elif ch == "}":
                        d -= 1
                    elif d == 0:
                        flat.append(ch)
                members = []
                for stmt in "".join(flat).split(";"):
                    stmt = stmt.strip()
                    if not stmt or re.match(r"(friend|using|static|typedef|template|enum|struct|class)\b", stmt) \
                            or stmt.endswith(":"):
                        continue
                    stmt = re.sub(r"^(public|private|protected)\s*:", "", stmt).strip()
                    decl = re.split(r"=|\{", stmt, maxsplit=1)[0].strip()
                    if "(" in decl:  # a function
                        continue
                    ident = re.findall(IDENT, decl)
                    if len(ident) >= 2:
                        members.append(ident[-1])
                if members:
                    found.setdefault(m.group(1), members)
    return found


def designator_lists(text):
    """Yields (offset, [designator, ...]) for each list opened by `{.x` or PROF_CONV(."""
    for m in re.finditer(r"\{\s*(?=\.\s*" + IDENT + r")|\bPROF_CONV(?:_BACKWARD)?\s*\(", text):
        close = "}" if m.group(0).startswith("{") else ")"
        depth, i, names = 0, m.end(), []
        while i < len(text):
            ch = text[i]
            if ch in "{([":
                depth += 1
            elif ch in "})]":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "." and depth == 0:
                d = re.match(r"\.\s*(" + IDENT + r")\s*(=(?!=)|,|" + re.escape(close) + ")", text[i:])
                prev = text[i - 1] if i else " "
                if d and not (prev.isalnum() or prev in "_)]"):
                    names.append(d.group(1))
            i += 1
        if len(names) >= 2:
            yield m.start(), names


def problems(text, known):
    out = []
    for offset, names in designator_lists(text):
        owners = [s for s, members in known.items() if all(n in members for n in names)]
        if not owners:
            continue
        in_order = [s for s in owners if [known[s].index(n) for n in names] == sorted(known[s].index(n) for n in names)]
        if not in_order:
            s = owners[0]
            out.append((offset, f"{{{', '.join('.' + n for n in names)}}} is not in the declaration order of "
                                f"{s} ({', '.join(n for n in known[s] if n in names)})"))
    return out


def comment_text(path):
    """A header's comments, every other character blanked, so offsets map to its lines."""
    with open(path, encoding="utf-8") as f:
        code = f.read()
    keep = [" " if c != "\n" else "\n" for c in code]
    for m in re.finditer(r"//[^\n]*|/\*.*?\*/", code, flags=re.S):
        keep[m.start():m.end()] = code[m.start():m.end()]
    return "".join(keep)


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    known = structs(argv[1])
    control = problems("proftrace::schedule({.wait = 1, .skip_first = 2, .active = 1});", known)
    if not control:
        print("control failed: a schedule_args list out of order was not reported "
              f"(schedule_args read as {known.get('schedule_args')})")
        return 1
    headers = sorted(os.path.join(root, n) for root, _, files in os.walk(argv[1]) for n in files
                     if n.endswith((".hpp", ".h")))
    paths = headers + [p for p in argv[2:] if p not in headers]
    bad, lists = 0, 0
    for path in paths:
        if path.endswith((".hpp", ".h", ".cpp", ".cu")):
            text = comment_text(path)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        lists += sum(1 for _ in designator_lists(text))
        for offset, message in problems(text, known):
            bad += 1
            print(f"{path}:{text.count(chr(10), 0, offset) + 1}: {message}")
    print(f"{lists} designator list(s) in {len(paths)} file(s), {bad} out of order "
          f"(control reported as required; {len(known)} structs read)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
