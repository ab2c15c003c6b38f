// The `proftrace` command line: validate: problems with their event index; validate --repair of cut traces and spools.
// (Part of the CLI suites; helpers in cli_test_support.hpp.)
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <unistd.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <chrono>
#include <fstream>
#include <algorithm>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "cli_test_support.hpp"

using namespace cli_test_support;

TEST_CASE("validate reports every injected problem with its event index") {
  temp_dir dir("cli-validate");
  CHECK(problems_of(pytorch_trace).empty());
  const auto ok = run_cli({"validate", pytorch_trace});
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("valid (36 events)") != std::string::npos);

  write_file(dir.path / "bad.json", R"({"traceEvents": [
    {"ph":"X","cat":"cpu_op","name":"ok","pid":1,"tid":1,"ts":0,"dur":1},
    {"cat":"cpu_op","name":"no_ph","pid":1,"tid":1,"ts":0,"dur":1},
    {"ph":"X","cat":"cpu_op","pid":1,"tid":1,"ts":0,"dur":1},
    {"ph":"X","name":"no_cat","pid":1,"tid":1,"ts":0,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"no_ts","pid":1,"tid":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"no_dur","pid":1,"tid":1,"ts":0},
    {"ph":"X","cat":"cpu_op","name":"ts_string","pid":1,"tid":1,"ts":"0","dur":1},
    {"ph":"X","cat":"cpu_op","name":"negative","pid":1,"tid":1,"ts":-5.5,"dur":1},
    {"ph":5,"name":"ph_number","ts":0},
    "a string",
    {"ph":"i","name":"fine","ts":3,"s":"t"},
    {"ph":"X","cat":7,"name":"cat_number","pid":1,"tid":1,"ts":0,"dur":[1]}
  ]})");
  const auto ps = problems_of(dir.path / "bad.json");
  CHECK(has_problem(ps, 1, "has no \"ph\""));
  CHECK(has_problem(ps, 2, "has no \"name\""));
  CHECK(has_problem(ps, 3, "without \"cat\""));
  CHECK(has_problem(ps, 4, "without \"ts\""));
  CHECK(has_problem(ps, 5, "without \"dur\""));
  CHECK(has_problem(ps, 6, "\"ts\" is a string, not a number"));
  CHECK(has_problem(ps, 7, "\"ts\" is negative"));
  CHECK(has_problem(ps, 8, "\"ph\" is a number, not a string"));
  CHECK(has_problem(ps, 9, "is a string, not an object"));
  CHECK(has_problem(ps, 11, "\"cat\" is a number"));
  CHECK(has_problem(ps, 11, "\"dur\" is an array"));
  for (auto& p : ps) {
    CHECK(p.index != 0);
    CHECK(p.index != 10);
  }
  CHECK(ps.size() == 11);
  const auto r = run_cli({"validate", (dir.path / "bad.json").string()});
  CHECK(r.rc == 1);
  CHECK(lines(r.out) == 12);
  CHECK(r.out.find("bad.json: event 4: is a complete event (\"X\") without \"ts\"") != std::string::npos);
  CHECK(r.out.find("11 problems in 12 events") != std::string::npos);

  write_file(dir.path / "shape.json", R"({"traceEvents": {"ph": "X"}})");
  CHECK(has_problem(problems_of(dir.path / "shape.json"), -1, "\"traceEvents\" is not an array"));
  write_file(dir.path / "broken.json", R"({"traceEvents": [{"ph":"X"}, oops]})");
  const auto broken = problems_of(dir.path / "broken.json");
  CHECK(has_problem(broken, 0, "without \"cat\""));
  CHECK(has_problem(broken, -1, "invalid JSON at byte 29"));
  CHECK(run_cli({"validate", (dir.path / "missing.json").string()}).rc == 1);
}

TEST_CASE("validate --repair: a plain trace cut anywhere keeps exactly the complete events before the cut") {
  temp_dir dir("cli-repair-plain");
  record_repair_trace(dir.path);
  const std::string text = slurp(dir.path / "full.json");
  const auto events = event_lines(dir.path / "full.json");
  REQUIRE(events.size() > 2000);
  REQUIRE(text.size() > (std::size_t{1} << 17));
  const auto find = [&](std::string_view what) {
    const auto at = text.find(what);
    REQUIRE(at != std::string::npos);
    return at;
  };
  const std::size_t events_open = find("\"traceEvents\": [") + 16;
  const std::size_t second_event = text.find("\n", events_open + 1);
  std::vector<std::size_t> cuts = {
      1, 2, find("\"schemaVersion\"") + 3, find("\"deviceProperties\"") + 20, find("\"baseTimeNanoseconds\"") + 23,
      find("\"traceEvents\"") + 5, find("\"traceEvents\"") + 14, events_open, events_open + 1, events_open + 40,
      second_event - 1, second_event, second_event + 1,
      find("\"overflow_policy\""), find("\"traceName\"") - 1, find("\"traceName\"") + 3, text.size() - 3, text.size() - 2};
  for (std::size_t c = 3; c < text.size(); c += text.size() / 151) cuts.push_back(c);
  const auto cut = dir.path / "cut.pt.trace.json";
  std::set<std::uint64_t> kept_counts;
  for (const auto c : cuts) {
    CAPTURE(c);
    write_file(cut, text.substr(0, c));
    check_repair(cut, text.substr(0, c), events, dir.path / "scratch.json");
    kept_counts.insert(pt::plan_repair(cut).events_kept);
  }
  CHECK(kept_counts.count(0) == 1);
  CHECK(kept_counts.count(events.size()) == 1);
  CHECK(kept_counts.size() > 100);

  // Cut in the tail, after "proftrace": {...}: the members before the cut stay.
  write_file(cut, text.substr(0, find("\"traceName\"") + 3));
  const auto plan = pt::plan_repair(cut);
  CHECK(plan.closing == "}");
  pt::write_repaired(cut, plan, dir.path / "tail.json");
  bool has_losses = false;
  for (auto& m : pt::read_trace(dir.path / "tail.json", {}).metadata) has_losses |= m.key == "proftrace.dropped_events";
  CHECK(has_losses);
  // The whole trace is not cut.
  CHECK(pt::plan_repair(dir.path / "full.json").complete);
}

TEST_CASE("validate --repair: gzip and zstd traces cut anywhere, their streams unfinished") {
  temp_dir dir("cli-repair-compressed");
  record_repair_trace(dir.path);
  const auto events = event_lines(dir.path / "full.json");
  for (const char* name : {"full.json.gz", "full.json.zst"}) {
    CAPTURE(name);
    const std::string compressed = slurp(dir.path / name);
    const std::string text = test_support::read_text(dir.path / name);
    const std::string suffix = std::string(name).substr(4);  // ".json.gz" / ".json.zst"
    const auto cut = dir.path / ("cut" + suffix);
    std::vector<std::size_t> cuts = {compressed.size() - 1, compressed.size() - 4, compressed.size() - 8};
    for (std::size_t c = 1; c < compressed.size(); c += compressed.size() / 61) cuts.push_back(c);
    std::uint64_t last_kept = 0;
    std::set<std::uint64_t> kept_counts;
    std::sort(cuts.begin(), cuts.end());
    for (const auto c : cuts) {
      CAPTURE(c);
      write_file(cut, compressed.substr(0, c));
      pt::repair_plan plan;
      try {
        plan = pt::plan_repair(cut);
      } catch (const pt::trace_error& e) {
        // Nothing decodes yet: zstd hands out whole blocks only.
        CHECK(std::string(e.what()).find("before any JSON") != std::string::npos);
        CHECK(last_kept == 0);
        continue;
      }
      CHECK_FALSE(plan.complete);
      CHECK(plan.cut.find(suffix.substr(6) == "gz" ? "gzip stream cut" : "zstd stream cut") == 0);
      CHECK(plan.events_kept >= last_kept);  // a later cut never keeps less
      last_kept = plan.events_kept;
      kept_counts.insert(plan.events_kept);
      check_repair(cut, text, events, dir.path / "scratch.json");
      // A plain reader of the cut file says it is cut, not that it is fine.
      CHECK_THROWS_AS(pt::read_trace(cut, {}), pt::trace_error);
    }
    if (suffix.ends_with(".gz")) {
      // Deflate decodes to the cut: nearly every cut keeps a different count,
      // and one in the trailer (CRC, length) loses no event.
      CHECK(kept_counts.size() > cuts.size() / 2);
      CHECK(kept_counts.count(events.size()) == 1);
    } else {
      // zstd decodes whole blocks (128 KiB of text): this trace has three,
      // and without a checksum the last one ends where the file does.
      CHECK(kept_counts.size() >= 2);
      CHECK(*kept_counts.rbegin() < events.size());
    }
    CHECK(pt::plan_repair(dir.path / name).complete);
  }
}

TEST_CASE("validate --repair on the command line: output, default name, -o, valid input, garbage") {
  temp_dir dir("cli-repair-cli");
  record_repair_trace(dir.path);
  const std::string text = slurp(dir.path / "full.json");
  const auto events = event_lines(dir.path / "full.json");
  // Inside the 11th event: 10 kept, the cut named by its index.
  std::size_t at = text.find("\"traceEvents\": [") + 16;
  for (int i = 0; i < 10; ++i) at = text.find("\n", at + 1);
  at += 20;
  const auto cut = dir.path / "t.pt.trace.json";
  write_file(cut, text.substr(0, at));
  auto r = run_cli({"validate", "--repair", cut.string()});
  CHECK(r.rc == 0);
  const auto repaired = dir.path / "t.pt.trace.repaired.json";
  CHECK(r.out == cut.string() + ": repaired: kept 10 events (cut inside event 10 at byte " + std::to_string(at) +
                     "); wrote " + repaired.string() + "\n");
  CHECK(slurp(cut) == text.substr(0, at));  // the input is left alone
  // summary and validate count the same 10 whole events (not the cut one).
  CHECK(run_cli({"summary", cut.string()}).err.find("summarised the 10 events before it") != std::string::npos);
  CHECK(run_cli({"validate", cut.string()}).out.find("truncated after 10 events") != std::string::npos);
  r = run_cli({"validate", repaired.string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("valid (10 events)") != std::string::npos);
  // -o, compressed by its suffix.
  r = run_cli({"validate", "--repair", cut.string(), "-o", (dir.path / "o.json.zst").string()});
  CHECK(r.rc == 0);
  CHECK(event_lines(dir.path / "o.json.zst").size() == 10);
  // A spool that lacks only its closing brackets keeps every event.
  const auto spool = dir.path / "spool.json";
  write_file(spool, text.substr(0, text.rfind("]", text.find("\"proftrace\": {"))));
  r = run_cli({"validate", "--repair", spool.string(), "-o", spool.string()});  // in place, asked for
  CHECK(r.rc == 0);
  CHECK(r.out.find("kept " + std::to_string(events.size()) + " events (cut between events") != std::string::npos);
  CHECK(event_lines(spool) == events);
  CHECK(run_cli({"validate", spool.string()}).rc == 0);
  // A tail of zeros (a file system's view after a crash) is a cut too.
  write_file(spool, text.substr(0, text.size() / 2) + std::string(4096, '\0'));
  r = run_cli({"validate", "--repair", spool.string(), "-o", (dir.path / "zeros.json").string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("invalid JSON") != std::string::npos);
  CHECK(run_cli({"validate", (dir.path / "zeros.json").string()}).rc == 0);

  // Already valid: said so, nothing written unless -o.
  r = run_cli({"validate", "--repair", (dir.path / "full.json").string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("valid (" + std::to_string(events.size()) + " events): nothing to repair") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path / "full.repaired.json"));
  r = run_cli({"validate", "--repair", (dir.path / "full.json.gz").string(), "-o", (dir.path / "copy.json").string()});
  CHECK(r.rc == 0);
  CHECK(slurp(dir.path / "copy.json") == test_support::read_text(dir.path / "full.json.gz"));

  // Nothing to recover: one line on stderr, exit 1, nothing written.
  write_file(dir.path / "empty.json", "");
  write_file(dir.path / "text.json", "this is not json");
  write_file(dir.path / "array.json", "[{\"ph\": \"X\"");
  write_file(dir.path / "head.json", "{\"schemaVersion\": 1, ]");
  write_file(dir.path / "notarray.json", "{\"traceEvents\": {\"a\": ");
  write_file(dir.path / "junk.json.gz", "not gzip at all");
  for (const char* bad : {"empty.json", "text.json", "array.json", "head.json", "notarray.json", "junk.json.gz", "missing.json"}) {
    CAPTURE(bad);
    r = run_cli({"validate", "--repair", (dir.path / bad).string()});
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find((dir.path / bad).string()) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(pt::default_repair_output(dir.path / bad)));
  }
  // Whole JSON with problems is not what --repair mends.
  write_file(dir.path / "seven.json", "{\"traceEvents\": [7]}");
  r = run_cli({"validate", "--repair", (dir.path / "seven.json").string()});
  CHECK(r.rc == 1);
  CHECK(r.out.find("event 0: is a number") != std::string::npos);
  CHECK(r.out.find("not cut off") != std::string::npos);
  // -o belongs to --repair.
  CHECK(run_cli({"validate", cut.string(), "-o", (dir.path / "x.json").string()}).rc == 2);
  CHECK(pt::default_repair_output("/a/b.pt.trace.json.zst") == "/a/b.pt.trace.repaired.json.zst");
  CHECK(pt::default_repair_output("x.gz") == "x.repaired.gz");
  CHECK(pt::default_repair_output("trace") == "trace.repaired");
}

TEST_CASE("validate --repair: an object that closes before traceEvents is refused; an escaped key still counts") {
  temp_dir dir("cli-repair-odd");
  write_file(dir.path / "closed.json", R"({"schemaVersion": 1, "args": {"x": 2}} "traceEvents": [{"ph": "i"}]})");
  auto r = run_cli({"validate", "--repair", (dir.path / "closed.json").string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("without \"traceEvents\"") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path / "closed.repaired.json"));
  // The reader unescapes keys: "trace\u0045vents" is traceEvents to it.
  write_file(dir.path / "escaped.json", R"({"trace\u0045vents": [{"ph": "i", "name": "a", "ts": 1}, {"ph": "i", "na)");
  r = run_cli({"validate", "--repair", (dir.path / "escaped.json").string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("kept 1 event (cut inside event 1 at byte") != std::string::npos);
  CHECK(event_lines(dir.path / "escaped.repaired.json").size() == 1);

  // A head that ends early is a cut (0 events kept); one followed by corrupt
  // compressed data is damage, and refused.
  std::string head_gz;
  {
    namespace io = boost::iostreams;
    std::ostringstream text;
    io::filtering_ostream out;
    out.push(io::gzip_compressor());
    out.push(text);
    out << R"({"schemaVersion": 1, "deviceProperties": [)";
    out.reset();
    head_gz = text.str();
  }
  write_file(dir.path / "head.json.gz", head_gz);
  r = run_cli({"validate", "--repair", (dir.path / "head.json.gz").string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("kept 0 events (cut before \"traceEvents\"") != std::string::npos);
  CHECK(run_cli({"validate", (dir.path / "head.repaired.json.gz").string()}).rc == 0);
  write_file(dir.path / "damaged.json.gz", head_gz + "not gzip");
  r = run_cli({"validate", "--repair", (dir.path / "damaged.json.gz").string()});
  CHECK(r.rc == 1);
  CHECK(r.err.find("nothing to repair: corrupt gzip data") != std::string::npos);
}

// ---- issue 17: stacks in linear time, merge bounded and strict, symlink
// loops, spools cut during a commit ----

TEST_CASE("validate --repair on a spool cut at every byte of a commit keeps only whole events of complete commits") {
  // A commit writes its events where the previous closing part began, then
  // a fresh closing part. A kill partway through leaves the new bytes
  // followed by leftovers of the old closing part, which can piece together
  // with a half-written event into "events" (before: 14 of 433 cuts gave a
  // repaired file that failed validate). Every state such a kill can leave
  // is built here from two real snapshots of the spool, before and after a
  // commit: the first k bytes of the new text over the old file.
  temp_dir dir("cli-repair-spool");
  temp_dir spool("cli-repair-spool-dir");
  proftrace::profile p({.flush_period = std::chrono::seconds(60), .spool_dir = spool.path});
  p.start();
  const auto files = test_support::files_in(spool.path);
  REQUIRE(files.size() == 1);
  const auto spool_file = files[0];
  std::vector<std::string> snapshots{slurp(spool_file)};
  // Commits of different sizes: some shorter than the closing part.
  for (int work : {2, 0, 1, 3, 0, 1}) {
    for (int i = 0; i < work; ++i) cli_work(4 + i);
    PROF_INSTANT("cli_commit_marker");
    p.flush();
    snapshots.push_back(slurp(spool_file));
  }
  p.stop();

  const auto cut = dir.path / "cut.pt.trace.json.part";
  const auto out = dir.path / "out.pt.trace.json";
  const auto count_events = [&](const std::string& text) { return complete_events_in(text, dir.path / "scratch.json"); };
  std::size_t states = 0, leftovers = 0;
  for (std::size_t s = 1; s < snapshots.size(); ++s) {
    const std::string& before = snapshots[s - 1];
    const std::string& after = snapshots[s];
    CAPTURE(s);
    std::size_t q = 0;  // where the commit starts writing: the old closing part's first byte
    while (q < before.size() && q < after.size() && before[q] == after[q]) ++q;
    REQUIRE(q < after.size());
    const auto committed_before = count_events(before);
    const auto events_after = event_lines([&] {
      write_file(dir.path / "after.json", after);
      return dir.path / "after.json";
    }());
    REQUIRE(events_after.size() > committed_before);
    for (std::size_t k = 0; q + k <= after.size(); ++k) {
      const std::string text = after.substr(0, q + k) + (q + k < before.size() ? before.substr(q + k) : std::string());
      CAPTURE(k);
      ++states;
      // Fresh files each time: replacing an existing one (O_TRUNC, rename
      // over it) makes ext4 write it back at once, 10x slower on a busy disk.
      std::filesystem::remove(cut);
      std::filesystem::remove(out);
      write_file(cut, text);
      const auto plan = pt::plan_repair(cut);
      if (plan.complete) {
        // Only a state that is whole: before the commit, or after it, give
        // or take trailing white space (the trailer, cut or left over).
        const auto json_of = [](const std::string& x) { return x.substr(0, x.find_last_not_of(" \t\n") + 1); };
        CHECK((json_of(text) == json_of(before) || json_of(text) == json_of(after)));
        continue;
      }
      leftovers += q + k < before.size();
      pt::write_repaired(cut, plan, out);
      const auto problems = problems_of(out);
      CHECK(problems.empty());
      for (auto& x : problems) MESSAGE(x.index << ": " << x.message);
      // Only bytes the writer wrote there are kept: never a leftover.
      REQUIRE(plan.keep_bytes <= text.size());
      CHECK(text.compare(0, plan.keep_bytes, after, 0, plan.keep_bytes) == 0);
      // Whole events, each as recorded, and never fewer than the complete commits hold.
      const auto kept = event_lines(out);
      CHECK(kept.size() == plan.events_kept);
      CHECK(kept.size() >= committed_before);
      REQUIRE(kept.size() <= events_after.size());
      CHECK(std::equal(kept.begin(), kept.end(), events_after.begin()));
    }
  }
  MESSAGE(states << " cut states, " << leftovers << " with leftovers of the old closing part");
  CHECK(leftovers > 500);

  // On the command line: a cut inside the last commit's events, over the
  // old closing part, names what it kept.
  const std::string& before = snapshots[snapshots.size() - 2];
  const std::string& after = snapshots.back();
  std::size_t q = 0;
  while (before[q] == after[q]) ++q;
  write_file(cut, after.substr(0, q + 40) + before.substr(q + 40));
  const auto r = run_cli({"validate", "--repair", cut.string(), "-o", out.string()});
  CHECK(r.rc == 0);
  CHECK(r.out.find("repaired: kept " + std::to_string(count_events(before)) + " events (a commit cut short") !=
        std::string::npos);
  CHECK(run_cli({"validate", out.string()}).rc == 0);
  // A spool merely cut short (no leftovers) keeps every complete event, as any trace.
  write_file(cut, after.substr(0, q + (after.size() - q) / 2));
  CHECK(pt::plan_repair(cut).events_kept == count_events(after.substr(0, q + (after.size() - q) / 2)));
}

TEST_CASE("validate --repair: a .pftrace cut inside a packet keeps every whole packet before the cut") {
  temp_dir dir("cli-repair-pftrace");
  {
    proftrace::profile p({.overflow = proftrace::overflow_policy::block, .stream_format = proftrace::trace_format::pftrace});
    p.start();
    for (int i = 0; i < 200; ++i) cli_work(3);
    p.stop();
    p.export_chrome_trace(dir.path / "full.pftrace");
  }
  std::ifstream in(dir.path / "full.pftrace", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(bytes.size() > 1000);
  const auto whole = pt::plan_repair(dir.path / "full.pftrace");
  CHECK(whole.complete);
  // Cuts inside a packet near a third and a half of the file, and in the last packet.
  const std::size_t cuts[] = {inside_packet_after(bytes, bytes.size() / 3), inside_packet_after(bytes, bytes.size() / 2),
                              bytes.size() - 1};
  for (const std::size_t cut : cuts) {
    CAPTURE(cut);
    const auto cut_file = dir.path / "cut.pt.trace.pftrace";
    std::ofstream(cut_file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(cut));
    const auto plan = pt::plan_repair(cut_file);
    CHECK_FALSE(plan.complete);
    CHECK(plan.keep_bytes <= cut);
    CHECK(plan.events_kept > 0);
    CHECK(plan.cut.find("inside packet") != std::string::npos);
    CHECK(pt::default_repair_output(cut_file).filename() == "cut.pt.trace.repaired.pftrace");
    const auto out = dir.path / "repaired.pftrace";
    pt::write_repaired(cut_file, plan, out);
    CHECK(std::filesystem::file_size(out) == plan.keep_bytes);
    CHECK(pt::plan_repair(out).complete);  // whole packets only: nothing left to repair
    CHECK(pt::plan_repair(out).events_kept == plan.events_kept);
  }
  // Cut inside its first packet: nothing whole to keep, so nothing to repair (never an empty "trace").
  const auto first_cut = dir.path / "first.pftrace";
  std::ofstream(first_cut, std::ios::binary | std::ios::trunc).write(bytes.data(), 5);
  CHECK_THROWS_WITH_AS(pt::plan_repair(first_cut), doctest::Contains("nothing to repair: no whole packet"), pt::trace_error);
}
