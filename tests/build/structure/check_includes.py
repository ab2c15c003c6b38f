#!/usr/bin/env python3
"""Who may include what, checked on the sources as text.

- tools/ includes no lib/ path: the command line reaches the library's
  internals only through the facade headers of proftrace_trace_io
  (<proftrace_trace_io/...>, lib/trace_io/) and public <proftrace/...>;
- each facade header includes only lib/ headers that exist;
- lib/records/ (the vocabulary between stages) includes no other lib/ folder;
- nothing in lib/ below the C API includes c_api/ (the C API sits on top).

  check_includes.py SOURCE_DIR
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".hpp", ".cpp", ".h"))


def main():
    root = pathlib.Path(sys.argv[1])
    lib = root / "lib"
    lib_folders = {p.name for p in lib.iterdir() if p.is_dir()}
    errors = []
    for f in sources(root / "tools"):
        for inc in INCLUDE.findall(f.read_text()):
            first = inc.split("/")[0]
            if first in lib_folders or "lib/" in inc:
                errors.append(f"{f.relative_to(root)} includes {inc}, a lib/ path (use <proftrace_trace_io/...>)")
    for f in sources(lib / "trace_io"):
        for inc in INCLUDE.findall(f.read_text()):
            if not (lib / inc).is_file():
                errors.append(f"{f.relative_to(root)} includes {inc}, which is no header under lib/")
    for f in sources(lib):
        folder = f.relative_to(lib).parts[0]
        for inc in INCLUDE.findall(f.read_text()):
            first = inc.split("/")[0]
            if "/" not in inc or first not in lib_folders:
                continue
            if folder == "records" and first != "records":
                errors.append(f"{f.relative_to(root)} includes {inc}: records/ includes no other part of lib/")
            if first == "c_api" and folder != "c_api":
                errors.append(f"{f.relative_to(root)} includes {inc}: only the C API includes c_api/")
    if errors:
        print("\n".join(errors))
        return 1
    print("includes: tools/ through proftrace_trace_io only; records/ and c_api/ kept in their places")
    return 0


if __name__ == "__main__":
    sys.exit(main())
