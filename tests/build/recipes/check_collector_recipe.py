#!/usr/bin/env python3
"""docs/contributing.md's collector recipe, applied to a copy of the tree.

Adds a toy collector `toy` exactly where the recipe says (the edits below,
each found by an anchor in today's files), checks that the files it touched
are those the page's worked example lists, compiles the new and changed
translation units against the changed headers (with -Werror=switch, so a
place that switches over every activity and is not in the recipe fails)
and links them with this build's libproftrace into a program whose session
starts, asks and stops the toy through the collectors' one table. A recipe
gone stale (a file moved, a table reshaped, a place left out) fails here.

  check_collector_recipe.py --source DIR --page docs/contributing.md --work DIR
      --cxx c++ --flags '-std=c++20|-I...' --link 'libproftrace.a|...'
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

TOY_POLICY = """// proftrace/collect/toy.hpp — a toy collector: what the recipe adds.
#pragma once

#include "../collectors.hpp"

namespace proftrace::collect {
struct toy {
  static constexpr activity kind = activity::toy;
  static constexpr std::string_view name = "toy";
};
}  // namespace proftrace::collect
"""

TOY_HOOKS = """// The toy collector: counts its starts and stops.
#include "collect/collector_hooks.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

int toy_starts = 0, toy_stops = 0;

extern const collector_hooks toy_hooks{
    .kind = activity::toy,
    .start = [](const profile_options&, bool, bool) { return ++toy_starts > 0; },
    .stop = [] { ++toy_stops; }};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
"""

TOY_CMAKE = "# A toy collector.\ntarget_sources(proftrace PRIVATE toy_hooks.cpp)\n"

TOY_PROGRAM = """// A session with the toy collector: started, asked and stopped through the table.
#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <string>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {
extern int toy_starts, toy_stops;
}
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace

int main(int argc, char** argv) {
  namespace pd = proftrace::detail;
  if (proftrace::to_string(proftrace::activity::toy) != "TOY") return std::puts("toy: to_string does not name it"), 1;
  const std::string out = argc > 1 ? argv[1] : "toy_trace.json";
  proftrace::profile p({.activities = {proftrace::activity::cpu, proftrace::activity::toy}});
  if (!p.activities().contains(proftrace::activity::toy)) return std::puts("toy: not among the activities"), 1;
  p.start();
  { PROF_SCOPE("with the toy collector"); }
  p.stop();
  p.export_chrome_trace(out);
  if (pd::toy_starts != 1 || pd::toy_stops != 1)
    return std::printf("toy: started %d times, stopped %d times\\n", pd::toy_starts, pd::toy_stops), 1;
  return 0;
}
"""


class Stale(Exception):
    pass


def edit(tree, rel, pattern, replace, what):
    path = tree / rel
    text = path.read_text()
    new, n = re.subn(pattern, replace, text, count=1, flags=re.S)
    if n != 1:
        raise Stale(f"{rel}: {what} not found where the recipe says")
    path.write_text(new)


def apply_recipe(tree):
    """The recipe's edits; returns the files it touched."""
    touched = set()

    def add(rel, text):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
        touched.add(rel)

    # Its `activity` value (include/proftrace/collectors.hpp), and its name.
    rel = "include/proftrace/collectors.hpp"
    text = (tree / rel).read_text()
    values = re.search(r"enum class activity : std::uint8_t \{([^}]*)\}", text)
    if not values:
        raise Stale(f"{rel}: enum class activity not found")
    last = max(int(v) for v in re.findall(r"= (\d+)", values.group(1)))
    edit(tree, rel, r"(enum class activity : std::uint8_t \{[^}]*?)( \})", rf"\1, toy = {last + 1}\2", "activity's values")
    edit(tree, rel, r"(to_string\(activity a\).*?)(\n  \}\n)", r'\1\n    case activity::toy: return "TOY";\2',
         "to_string(activity)'s cases")
    touched.add(rel)
    # Its policy type in include/proftrace/collect/<name>.hpp.
    add("include/proftrace/collect/toy.hpp", TOY_POLICY)
    # Its type in `build_collectors` (include/proftrace/profile.hpp).
    rel = "include/proftrace/profile.hpp"
    edit(tree, rel, r'((?:#include "collect/[a-z_]+\.hpp"\n)+)', r'\1#include "collect/toy.hpp"\n', "collect/ includes")
    edit(tree, rel, r"(using build_collectors =\s*collector_list<[^>]*)>", r"\1, collect::toy>", "build_collectors")
    touched.add(rel)
    # One folder, named in lib/collect/CMakeLists.txt's list.
    rel = "lib/collect/CMakeLists.txt"
    edit(tree, rel, r"(foreach\(collector [^)]*)\)", r"\1 toy)", "the list of collector folders")
    touched.add(rel)
    add("lib/collect/toy/CMakeLists.txt", TOY_CMAKE)
    add("lib/collect/toy/toy_hooks.cpp", TOY_HOOKS)
    # Its one line in the table of lib/collect/collector_hooks.cpp.
    rel = "lib/collect/collector_hooks.cpp"
    edit(tree, rel, r"(extern const collector_hooks [^;]*);", r"\1, toy_hooks;", "the hooks' declarations")
    edit(tree, rel, r"(all_collectors\[\] = \{.*?)(\n\};)", r"\1\n    &toy_hooks,\2", "the table all_collectors")
    touched.add(rel)
    return touched


def listed_in_page(page):
    """The files of the page's worked example of a collector (its diff --stat)."""
    text = page.read_text()
    section = re.search(r"## Worked example: a collector\n(.*?)(?=\n## |\Z)", text, re.S)
    if not section:
        raise Stale(f"{page.name}: no section '## Worked example: a collector'")
    stat = re.search(r"```text\n(.*?)```", section.group(1), re.S)
    if not stat:
        raise Stale(f"{page.name}: the collector's worked example has no ```text file list")
    return {line.split("|")[0].strip() for line in stat.group(1).splitlines() if "|" in line}


def run(cmd, what):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise Stale(f"{what} failed:\n$ {' '.join(map(str, cmd))}\n{result.stdout}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--page", required=True, type=pathlib.Path)
    ap.add_argument("--work", required=True, type=pathlib.Path)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--flags", default="")
    ap.add_argument("--link", default="")
    a = ap.parse_args()
    a.source, a.work = a.source.resolve(), a.work.resolve()
    flags = [f for f in a.flags.split("|") if f]
    link = [f for f in a.link.split("|") if f]
    tree = a.work / "tree"
    shutil.rmtree(a.work, ignore_errors=True)
    # The public headers include each other by relative path: all of them are
    # copied. Of lib/, the files the recipe changes and the header beside them
    # (the rest is read in place).
    shutil.copytree(a.source / "include", tree / "include")
    for rel in ("lib/collect/CMakeLists.txt", "lib/collect/collector_hooks.cpp", "lib/collect/collector_hooks.hpp"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(a.source / rel, tree / rel)
    try:
        touched = apply_recipe(tree)
        listed = listed_in_page(a.page)
        if touched != listed:
            raise Stale(f"the recipe touched {sorted(touched)}, the page's worked example lists {sorted(listed)}")
        includes = [f"-I{tree / 'include'}", f"-I{tree / 'lib'}", f"-I{a.source / 'lib'}"]
        (a.work / "toy_program.cpp").write_text(TOY_PROGRAM)
        objects = []
        for src in (tree / "lib/collect/toy/toy_hooks.cpp", tree / "lib/collect/collector_hooks.cpp",
                    a.work / "toy_program.cpp"):
            obj = a.work / (src.stem + ".o")
            run([a.cxx, *includes, *flags, "-Werror=switch", "-c", str(src), "-o", str(obj)], f"compiling {src.name}")
            objects.append(str(obj))
        program = a.work / "toy_program"
        run([a.cxx, *objects, *link, "-o", str(program)], "linking the toy program")
        run([str(program), str(a.work / "toy_trace.json")], "the toy program")
    except Stale as e:
        print(f"contributing.md's collector recipe is stale: {e}")
        return 1
    print(f"the collector recipe holds: {len(touched)} files, as the page lists; the toy started and stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
