#!/usr/bin/env python3
"""docs/contributing.md's format and command recipes against the tree, and
every path the page's recipes name.

- the writer calls the recipe lists are the calls the trace window makes on
  a writer (lib/drain/trace_window.*), and every writer of `trace_writers`
  declares each of them and its `static constexpr trace_format format`;
- `trace_format` (include/proftrace/profile.hpp) has one value per writer
  or export-only row (`true` in its row of lib/formats/trace_formats.cpp)
  besides `automatic`, and the table `trace_formats` as many rows, its
  size the same in lib/formats/trace_formats.hpp and .cpp;
- every command is where the command recipe puts one: tools/commands/<name>.cpp
  defining `const command <name>_command{`, its `extern` in command.hpp, its
  row in proftrace_cli.cpp's table, its source in tools/CMakeLists.txt, its
  suite in tests/cli/CMakeLists.txt's list and its section in tools/README.md
  and docs/reference/cli.md (`proftrace <name>`), and nothing else is;
- every file or folder the recipes name (a path under include/, lib/,
  tools/, tests/, cmake/, docs/ or bench/, `<name>` placeholders aside;
  the worked examples' new files are not in the tree) exists.

  check_recipes.py --source DIR --page docs/contributing.md
"""
import argparse
import pathlib
import re
import sys


def read(root, rel):
    path = root / rel
    if not path.is_file():
        raise SystemExit(f"contributing.md's format recipe is stale: {rel} is missing")
    return path.read_text()


def recipe_calls(page_text):
    bullet = re.search(r"\*\*A new output format\*\*(.*?)(?=\n- \*\*)", page_text, re.S)
    listed = re.search(r"the writer calls every writer has \((.*?)\) and its", bullet.group(1), re.S) if bullet else None
    if not listed:
        raise SystemExit("contributing.md: the format recipe's list of writer calls is not where it was")
    return set(re.findall(r"`([a-z_]+)(?:\(\)|\([^`]*\))?`", listed.group(1)))


def window_calls(root):
    text = read(root, "lib/drain/trace_window.hpp") + read(root, "lib/drain/trace_window.cpp")
    calls = set(re.findall(r"\bw\.([a-z_]+)\(", text))  # each_writer([&](auto& w) { w.scope(...); })
    calls |= set(re.findall(r"\bWriters::([a-z_]+)\(", text))  # static ones: Writers::tail(...)
    return calls


def writers(root):
    text = read(root, "lib/drain/trace_window.hpp")
    variant = re.search(r"using trace_writers = std::variant<([^>]*)>;", text)
    if not variant:
        raise SystemExit("contributing.md's format recipe is stale: no `using trace_writers = std::variant<...>`")
    return [w.strip() for w in variant.group(1).split(",")]


def writer_header(root, writer):
    name = writer.removesuffix("_writer")
    for rel in (f"lib/formats/{name}/{writer}.hpp", f"lib/formats/{name.split('_')[0]}/{writer}.hpp"):
        if (root / rel).is_file():
            return rel
    raise SystemExit(f"contributing.md's format recipe is stale: {writer} is not lib/formats/<format>/{writer}.hpp")


def named_paths(page_text):
    recipes = page_text.split("\n## ")[0]
    paths = set()
    for token in re.findall(r"[`( ]((?:include|lib|tools|tests|cmake|docs|bench)/[A-Za-z0-9_./{},<>-]+)", recipes):
        token = token.rstrip(".,")
        if "<" in token:
            continue
        braces = re.match(r"(.*)\{([^}]*)\}(.*)$", token)
        for p in ([braces.group(1) + alt + braces.group(3) for alt in braces.group(2).split(",")] if braces else [token]):
            paths.add(p)
    return paths


def command_errors(root):
    errors = []
    externs = re.search(r"extern const command ([^;]*);", read(root, "tools/commands/command.hpp"))
    declared = set(re.findall(r"(\w+)_command", externs.group(1))) if externs else set()
    table = re.search(r"commands\[\] = \{([^}]*)\}", read(root, "tools/proftrace_cli.cpp"))
    rows = set(re.findall(r"&cli::(\w+)_command", table.group(1))) if table else set()
    files = {p.stem for p in (root / "tools/commands").glob("*.cpp")} - {"command"}
    cli_sources = re.search(r"add_executable\(proftrace_cli ([^)]*)\)", read(root, "tools/CMakeLists.txt"))
    built = set(re.findall(r"commands/(\w+)\.cpp", cli_sources.group(1))) - {"command"} if cli_sources else set()
    suites = re.search(r"foreach\(command ([^)]*)\)", read(root, "tests/cli/CMakeLists.txt"))
    tested = set(suites.group(1).split()) if suites else set()
    places = {"extern in command.hpp": declared, "row in proftrace_cli.cpp": rows,
              "file in tools/commands/": files, "source in tools/CMakeLists.txt": built}
    for name in set().union(*places.values()):
        lacks = [place for place, names in places.items() if name not in names]
        if lacks:
            errors.append(f"command {name} has no {', no '.join(lacks)}")
        if name in files and not re.search(rf"const command {name}_command\{{", read(root, f"tools/commands/{name}.cpp")):
            errors.append(f"tools/commands/{name}.cpp defines no `const command {name}_command{{`")
        if name not in tested:
            errors.append(f"command {name} has no cli_{name}_test in tests/cli/CMakeLists.txt's list")
        for page in ("tools/README.md", "docs/reference/cli.md"):
            if f"proftrace {name}" not in read(root, page):
                errors.append(f"{page} has no section on `proftrace {name}`")
    return errors, len(files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--page", required=True, type=pathlib.Path)
    a = ap.parse_args()
    root = a.source
    page_text = a.page.read_text()
    errors = []

    listed = recipe_calls(page_text)
    made = window_calls(root)
    if made - listed:
        errors.append(f"the trace window calls {sorted(made - listed)} on a writer; the recipe does not list them")
    for writer in writers(root):
        rel = writer_header(root, writer)
        text = read(root, rel)
        missing = sorted(c for c in listed if not re.search(rf"\b{c}\s*\(", text))
        if missing:
            errors.append(f"{rel} does not declare the recipe's {missing}")
        if not re.search(r"static constexpr trace_format format\b", text):
            errors.append(f"{rel} has no static constexpr trace_format format")

    values = re.search(r"enum class trace_format : std::uint8_t \{([^}]*)\}", read(root, "include/proftrace/profile.hpp"))
    formats = [v.strip() for v in values.group(1).split(",") if v.strip() and v.strip() != "automatic"] if values else []
    sizes = [re.search(r"std::array<format_row, (\d+)> trace_formats", read(root, f"lib/formats/trace_formats.{ext}"))
             for ext in ("hpp", "cpp")]
    # An export-only row (written by converting from Kineto JSON) has no writer.
    export_only = re.findall(r"\{trace_format::\w+, \"[^\"]*\", \"[^\"]*\", true,", read(root, "lib/formats/trace_formats.cpp"))
    counts = {"trace_format's values besides automatic": len(formats),
              "trace_writers' writers and export-only rows": len(writers(root)) + len(export_only)}
    for ext, size in zip(("hpp", "cpp"), sizes):
        counts[f"trace_formats' size in trace_formats.{ext}"] = int(size.group(1)) if size else -1
    if len(set(counts.values())) != 1:
        errors.append("these should agree: " + ", ".join(f"{k} {v}" for k, v in counts.items()))

    command_problems, commands = command_errors(root)
    errors += command_problems

    for rel in sorted(named_paths(page_text)):
        if not any((root / (rel + ext)).exists() for ext in ("", ".hpp", ".cpp")):  # "perfetto/perfetto_reader"
            errors.append(f"the page names {rel}, which does not exist")

    if errors:
        print("contributing.md's recipes are stale:\n  " + "\n  ".join(errors))
        return 1
    print(f"the recipes hold: {len(listed)} writer calls, {len(formats)} formats, {commands} commands each in its places;"
          " every named path exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
