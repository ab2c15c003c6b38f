#!/usr/bin/env python3
"""Compiles every C++ code block of the given Markdown files, so the
documentation's examples cannot drift from the library.

A block is C++ when its fence's info string is `cpp`, `c++`, `cxx` or `cc`
(any other, such as `text` or `c++-sketch`, marks a sketch that is not
compiled). Each block is one of:

  a program   it defines `int main(`: compiled as it is, linked against the
              build's libproftrace and run in a directory of its own; it
              must exit 0.
  a fragment  anything else: statements, compiled (not linked) as the body
              of a function, after prelude.hpp, which includes
              <proftrace/proftrace.hpp> and declares the placeholder
              functions the documentation calls (work(), solve(), run(), ...).

Errors point at the Markdown file's own lines (#line). Exit status 0 when
every block passed, 1 otherwise.

--control: the files are controls; a block whose first line is
`// readme-test: must fail: REGEX` must fail with output matching REGEX
(so it fails for the reason it was written for) and every other block must
pass. This is how the test shows that it can fail.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

CXX_TAGS = {"cpp", "c++", "cxx", "cc"}
# With --cc / --fc: ```c blocks are compiled as C11 against <proftrace/proftrace.h>
# (programs linked and run, fragments compiled as a function's body), and
# ```fortran blocks (whole programs) are compiled with `use proftrace`,
# linked and run.
C_TAGS = {"c"}
FORTRAN_TAGS = {"fortran", "f90"}
LANGS = {"cpp": CXX_TAGS}
FORTRAN_MAIN = re.compile(r"^\s*program\s+\w+", re.IGNORECASE | re.MULTILINE)
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MAIN = re.compile(r"\bint\s+main\s*\(")
MUST_FAIL = "// readme-test: must fail"


def blocks(path, langs=None):
    """Yields (first_line_number, text) for each C++ block of a Markdown file,
    or (first_line_number, text, lang) for each block of `langs` ({lang: tags})."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        tag = info.split()[0].lower() if info else ""
        body, j = [], i + 1
        while j < len(lines):
            close = FENCE.match(lines[j])
            if close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence) \
                    and not close.group("info").strip():
                break
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        if langs is None:
            if tag in CXX_TAGS:
                yield i + 2, "\n".join(body) + "\n"
        else:
            for lang, tags in langs.items():
                if tag in tags:
                    yield i + 2, "\n".join(body) + "\n", lang
        i = j + 1


def run(cmd, cwd=None, env=None, timeout=300):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or "") + f"\n(timed out after {timeout} s)"


def check_c_block(args, path, line, text, index):
    """A ```c block: C11 against <proftrace/proftrace.h>. Returns (ok, kind, log)."""
    work = os.path.join(args.work_dir, f"{os.path.basename(path)}-{line}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src = os.path.join(work, "block.c")
    where = os.path.abspath(path).replace("\\", "\\\\").replace('"', '\\"')
    flags = ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-Wno-unused-variable",
             *[f for f in args.flags if f.startswith(("-I", "-D"))]]
    if MAIN.search(text):
        with open(src, "w", encoding="utf-8") as f:
            f.write(f'#line {line} "{where}"\n{text}')
        exe = os.path.join(work, "block")
        rc, log = run([args.cc, *flags, src, "-o", exe, *args.link, "-lstdc++", "-lm"])
        if rc != 0:
            return False, "C program, does not compile", log
        env = dict(os.environ, PROFTRACE_SPOOL_DIR=work)
        rc, out = run([exe], cwd=work, env=env, timeout=args.run_timeout)
        if rc != 0:
            return False, f"C program, exits with {rc}", out
        return True, "C program, compiled and ran", out
    with open(src, "w", encoding="utf-8") as f:
        f.write("#include <proftrace/proftrace.h>\n#include <stddef.h>\n"
                f"void proftrace_readme_block_{index}(const char* name, int n, double* a, size_t bytes);\n"
                f"void proftrace_readme_block_{index}(const char* name, int n, double* a, size_t bytes) {{\n"
                f"(void)name; (void)n; (void)a; (void)bytes;\n"
                f'#line {line} "{where}"\n{text}}}\n')
    rc, log = run([args.cc, *flags, "-c", src, "-o", os.path.join(work, "block.o")])
    if rc != 0:
        return False, "C fragment, does not compile", log
    return True, "C fragment, compiled", log


def check_fortran_block(args, path, line, text, index):
    """A ```fortran block: a whole program using the proftrace module."""
    work = os.path.join(args.work_dir, f"{os.path.basename(path)}-{line}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if not FORTRAN_MAIN.search(text):
        return False, "Fortran block, not a program", "a ```fortran block must be a whole program"
    src = os.path.join(work, "block.f90")
    with open(src, "w", encoding="utf-8") as f:
        f.write(text)
    exe = os.path.join(work, "block")
    rc, log = run([args.fc, *args.fortran_flags, src, "-o", exe, *args.fortran_link, *args.link, "-lstdc++"])
    if rc != 0:
        return False, "Fortran program, does not compile", log
    env = dict(os.environ, PROFTRACE_SPOOL_DIR=work)
    rc, out = run([exe], cwd=work, env=env, timeout=args.run_timeout)
    if rc != 0:
        return False, f"Fortran program, exits with {rc}", out
    return True, "Fortran program, compiled and ran", out


def check_block(args, path, line, text, index, lang="cpp"):
    """Returns (ok, kind, log)."""
    if lang == "c":
        return check_c_block(args, path, line, text, index)
    if lang == "fortran":
        return check_fortran_block(args, path, line, text, index)
    work = os.path.join(args.work_dir, f"{os.path.basename(path)}-{line}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src = os.path.join(work, "block.cpp")
    where = os.path.abspath(path).replace("\\", "\\\\").replace('"', '\\"')
    if MAIN.search(text):
        with open(src, "w", encoding="utf-8") as f:
            f.write(f'#line {line} "{where}"\n{text}')
        exe = os.path.join(work, "block")
        rc, log = run([args.cxx, *args.flags, src, "-o", exe, *args.link])
        if rc != 0:
            return False, "program, does not compile", log
        env = dict(os.environ, PROFTRACE_SPOOL_DIR=work)
        rc, out = run([exe], cwd=work, env=env, timeout=args.run_timeout)
        if rc != 0:
            return False, f"program, exits with {rc}", out
        return True, "program, compiled and ran", out
    with open(src, "w", encoding="utf-8") as f:
        f.write(f'#include "{os.path.abspath(args.prelude)}"\n'
                f"void proftrace_readme_block_{index}() {{\n"
                f'#line {line} "{where}"\n{text}}}\n')
    rc, log = run([args.cxx, *args.flags, "-c", src, "-o", os.path.join(work, "block.o")])
    if rc != 0:
        return False, "fragment, does not compile", log
    return True, "fragment, compiled", log


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--flags", default="", help="compiler flags, '|'-separated")
    ap.add_argument("--link", default="", help="what a program links, '|'-separated")
    ap.add_argument("--prelude", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("--control", action="store_true")
    ap.add_argument("--cc", default="", help="also compile ```c blocks with this C compiler")
    ap.add_argument("--fc", default="", help="also compile ```fortran blocks with this Fortran compiler")
    ap.add_argument("--fortran-flags", default="", help="Fortran flags (the module's folder), '|'-separated")
    ap.add_argument("--fortran-link", default="", help="what a Fortran program links first, '|'-separated")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    args.flags = [f for f in args.flags.split("|") if f]
    args.link = [f for f in args.link.split("|") if f]
    args.fortran_flags = [f for f in args.fortran_flags.split("|") if f]
    args.fortran_link = [f for f in args.fortran_link.split("|") if f]
    langs = dict(LANGS)
    if args.cc:
        langs["c"] = C_TAGS
    if args.fc:
        langs["fortran"] = FORTRAN_TAGS
    os.makedirs(args.work_dir, exist_ok=True)

    checked, wrong = 0, []
    for path in args.files:
        for index, (line, text, lang) in enumerate(blocks(path, langs)):
            checked += 1
            ok, kind, log = check_block(args, path, line, text, index, lang)
            expect_fail = args.control and text.lstrip().startswith(MUST_FAIL)
            where = f"{os.path.basename(path)}:{line}"
            if expect_fail and not ok:
                reason = text.lstrip().splitlines()[0][len(MUST_FAIL):].lstrip(": ").strip()
                if reason and not re.search(reason, log, re.IGNORECASE):
                    wrong.append(where)
                    print(f"FAIL  {where} ({kind}, but not for the reason the control names: {reason!r})")
                    print("      " + "\n      ".join(log.rstrip().splitlines()[-60:]))
                    continue
            if ok != expect_fail:
                print(f"ok    {where} ({kind}{'' if ok else ', as the control requires'})")
            else:
                wrong.append(where)
                print(f"FAIL  {where} ({kind}{', but the control requires a failure' if ok else ''})")
                print("      " + "\n      ".join(log.rstrip().splitlines()[-60:]))
    if checked == 0:
        print("no C++ code block found: nothing was checked")
        return 1
    if args.control and not any(
            text.lstrip().startswith(MUST_FAIL) for path in args.files for _, text in blocks(path)):
        print("a control needs at least one block marked to fail")
        return 1
    print(f"{checked} code block(s) checked, {len(wrong)} wrong{': ' + ' '.join(wrong) if wrong else ''}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
