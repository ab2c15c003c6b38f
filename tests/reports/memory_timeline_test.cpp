// export_memory_timeline's files (torch's layouts), categories, peak
// statistics per trace, session and step, reserved sizes reported by a pool,
// allocations carried between consecutive traces, and the errors.
#include <doctest/doctest.h>

#include <proftrace/proftrace.hpp>

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "reports/memory_timeline.hpp"
#include "test_support.hpp"

namespace {

using proftrace::memory_category;
char arena[16][64];  // addresses to report; nothing is really allocated

// Allocation times at least 2 ms apart, so every record has its own
// microsecond in the coalesced timeline.
void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

boost::json::array read_json_array(const std::filesystem::path& p) {
  return boost::json::parse(test_support::read_text(p)).as_array();
}

std::vector<std::int64_t> ints(const boost::json::value& v) {
  std::vector<std::int64_t> out;
  for (const auto& x : v.as_array()) out.push_back(x.as_int64());
  return out;
}

// Records: parameter 1000, activation 200 (the thread's category), temporary
// 30 (named), free of the activation, unknown 50; and 4096 on device 0.
void categorised_program() {
  PROF_SCOPE("program");
  PROF_ALLOC(arena[0], 1000, -1, memory_category::parameter);
  pause();
  {
    PROF_MEMORY_CATEGORY(memory_category::activation);
    PROF_ALLOC(arena[1], 200);
    pause();
    PROF_ALLOC(arena[2], 30, -1, memory_category::temporary);
    pause();
  }
  PROF_FREE(arena[1]);
  pause();
  PROF_ALLOC(arena[3], 50);
  PROF_ALLOC(arena[4], 4096, 0);
}

}  // namespace

TEST_CASE("timeline files: torch's [times, sizes], raw events and gzip, per device") {
  test_support::temp_dir out("timeline");
  proftrace::profile p({.profile_memory = true});
  p.start();
  categorised_program();
  p.stop();

  p.export_memory_timeline(out.path / "host.json", "cpu");
  const auto host = read_json_array(out.path / "host.json");
  REQUIRE(host.size() == 2);
  const auto times = ints(host[0]);
  const auto& sizes = host[1].as_array();
  REQUIRE(times.size() == 5);
  REQUIRE(sizes.size() == 5);
  for (std::size_t i = 1; i < times.size(); ++i) CHECK(times[i] > times[i - 1]);
  // Rows: [0, parameter, optimizer_state, input, temporary, activation, gradient, autograd_detail, unknown].
  CHECK(ints(sizes[0]) == std::vector<std::int64_t>{0, 1000, 0, 0, 0, 0, 0, 0, 0});
  CHECK(ints(sizes[1]) == std::vector<std::int64_t>{0, 1000, 0, 0, 0, 200, 0, 0, 0});
  CHECK(ints(sizes[2]) == std::vector<std::int64_t>{0, 1000, 0, 0, 30, 200, 0, 0, 0});
  CHECK(ints(sizes[3]) == std::vector<std::int64_t>{0, 1000, 0, 0, 30, 0, 0, 0, 0});
  CHECK(ints(sizes[4]) == std::vector<std::int64_t>{0, 1000, 0, 0, 30, 0, 0, 0, 50});

  // Gzipped, the same content; the default device is cuda:0 since device 0 holds memory.
  p.export_memory_timeline(out.path / "host.json.gz", "cpu");
  CHECK(test_support::read_text(out.path / "host.json.gz") == test_support::read_text(out.path / "host.json"));
  p.export_memory_timeline(out.path / "default.json");
  const auto device0 = read_json_array(out.path / "default.json");
  REQUIRE(ints(device0[0]).size() == 1);
  CHECK(ints(device0[1].as_array()[0]) == std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 4096});

  // Raw: [t_ns, action (CREATE 2, DESTROY 4), bytes, category index].
  p.export_memory_timeline(out.path / "host.raw.json.gz", "cpu");
  const auto raw = read_json_array(out.path / "host.raw.json.gz");
  REQUIRE(raw.size() == 5);
  const std::vector<std::vector<std::int64_t>> expected{{2, 1000, 0}, {2, 200, 4}, {2, 30, 3}, {4, -200, 4}, {2, 50, 7}};
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto row = ints(raw[i]);
    REQUIRE(row.size() == 4);
    CHECK(row[0] / 1000 == times[i]);  // the coalesced times are the raw ones in microseconds
    CHECK(std::vector<std::int64_t>(row.begin() + 1, row.end()) == expected[i]);
  }
}

TEST_CASE("peaks per trace, session and step; a pool's reserved size") {
  proftrace::profile p({.schedule = proftrace::schedule({.active = 3, .repeat = 1}), .profile_memory = true});
  p.start();  // step 0
  PROF_ALLOC(arena[0], 100);
  PROF_ALLOC(arena[1], 200);
  PROF_FREE(arena[0]);
  PROF_FREE(arena[1]);
  p.step();  // step 1
  PROF_ALLOC(arena[2], 50);
  p.step();  // step 2
  PROF_MEMORY_RESERVED(4096);
  PROF_ALLOC(arena[3], 1000);
  PROF_FREE(arena[3]);
  p.step();  // the trace of steps 0..2 is ready
  p.stop();

  const auto stats = p.memory_stats();
  REQUIRE(stats.size() == 1);
  const auto& host = stats[0];
  CHECK(host.device == -1);
  CHECK(host.current_allocated == 50);
  CHECK(host.current_reserved == 4096);
  CHECK(host.trace == proftrace::memory_peaks{1050, 4096});
  CHECK(host.session == proftrace::memory_peaks{1050, 4096});
  const std::vector<proftrace::step_memory_peaks> steps{{0, {300, 300}}, {1, {50, 50}}, {2, {1050, 4096}}};
  CHECK(host.steps == steps);
}

TEST_CASE("consecutive traces: live allocations carry over as PREEXISTING; the session keeps its peak") {
  test_support::temp_dir out("consecutive");
  int traces = 0;
  proftrace::profile p({.schedule = proftrace::schedule({.active = 1, .repeat = 2}),
                        .on_trace_ready =
                            [&](proftrace::session& s) {
                              ++traces;
                              s.export_memory_timeline(out.path / ("t" + std::to_string(traces) + ".raw.json.gz"));
                            },
                        .profile_memory = true});
  p.start();  // step 0: trace 1
  PROF_ALLOC(arena[5], 700, -1, memory_category::parameter);
  PROF_ALLOC(arena[6], 5000);
  PROF_FREE(arena[6]);
  p.step();  // step 1: trace 2
  PROF_FREE(arena[5]);
  p.step();
  p.stop();
  REQUIRE(traces == 2);

  const auto second = read_json_array(out.path / "t2.raw.json.gz");
  REQUIRE(second.size() == 2);
  CHECK(ints(second[0]) == std::vector<std::int64_t>{-1, 1, 700, 0});  // PREEXISTING, parameter
  const auto destroy = ints(second[1]);
  CHECK(destroy[1] == 4);
  CHECK(destroy[2] == -700);
  CHECK(destroy[3] == 0);

  const auto host = p.memory_stats().at(0);
  const std::vector<proftrace::step_memory_peaks> steps{{0, {5700, 5700}}, {1, {700, 700}}};
  CHECK(host.steps == steps);
  CHECK(host.trace.max_allocated == 700);     // trace 2 started with 700 live
  CHECK(host.session.max_allocated == 5700);  // trace 1's peak
  CHECK(host.current_allocated == 0);
}

TEST_CASE("memory_stats() across start()s of one profile: the session's peak stays; a start() that records nothing keeps the last trace's") {
  proftrace::profile p({.profile_memory = true});
  p.start();
  PROF_ALLOC(arena[10], 1000);
  PROF_FREE(arena[10]);
  p.stop();
  p.start();
  PROF_ALLOC(arena[10], 10);
  PROF_FREE(arena[10]);
  p.stop();
  REQUIRE(p.memory_stats().size() == 1);
  CHECK(p.memory_stats()[0].trace.max_allocated == 10);
  CHECK(p.memory_stats()[0].session.max_allocated == 1000);

  // The schedule ends in the first run; the second records nothing, as torch's.
  proftrace::profile done({.schedule = proftrace::schedule({.warmup = 1, .active = 1, .repeat = 1}), .profile_memory = true});
  for (int run = 0; run < 2; ++run) {
    done.start();
    for (int i = 0; i < 3; ++i) {
      PROF_ALLOC(arena[11], 100);
      PROF_FREE(arena[11]);
      done.step();
    }
    done.stop();
    CHECK(done.has_trace());
    REQUIRE(done.memory_stats().size() == 1);
    CHECK(done.memory_stats()[0].trace.max_allocated == 100);
  }
}

TEST_CASE("a trace after a gap starts from nothing: an earlier allocation's free is an unknown free") {
  test_support::temp_dir out("gap");
  proftrace::profile first({.profile_memory = true});
  first.start();
  PROF_ALLOC(arena[7], 64);
  first.stop();
  proftrace::profile second({.profile_memory = true});
  second.start();
  PROF_FREE(arena[7]);
  PROF_ALLOC(arena[8], 8);
  second.stop();
  second.export_chrome_trace(out.path / "t.json");
  CHECK(test_support::read_trace(out.path / "t.json").at("proftrace").at("unknown_frees").as_int64() == 1);
  CHECK(second.memory_stats().at(0).current_allocated == 8);
}

TEST_CASE("timeline errors: no trace, no profile_memory, unknown device, unwritable path") {
  test_support::temp_dir out("timeline_errors");
  proftrace::profile none({.profile_memory = true});
  none.export_memory_timeline(out.path / "m.json");  // no trace: nothing written, one warning
  CHECK_FALSE(std::filesystem::exists(out.path / "m.json"));
  CHECK(none.memory_stats().empty());

  proftrace::profile without_memory;
  without_memory.start();
  without_memory.stop();
  CHECK_THROWS_WITH_AS(without_memory.export_memory_timeline(out.path / "m.json"),
                       doctest::Contains("requires profile_memory=true"), std::logic_error);
  CHECK(without_memory.memory_stats().empty());

  proftrace::profile p({.profile_memory = true});
  p.start();
  PROF_ALLOC(arena[9], 10);
  p.stop();
  CHECK_THROWS_WITH_AS(p.export_memory_timeline(out.path / "m.json", "gpu0"), doctest::Contains("gpu0"),
                       std::invalid_argument);
  CHECK_THROWS_AS(p.export_memory_timeline(out.path / "m.json", "cuda:x"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(p.export_memory_timeline(out.path / "missing" / "m.html"), doctest::Contains("missing"),
                       std::runtime_error);
  // A device with no memory: an empty timeline, an empty plot.
  p.export_memory_timeline(out.path / "empty.json", "cuda:3");
  CHECK(test_support::read_text(out.path / "empty.json") == "[[], []]");
  p.export_memory_timeline(out.path / "empty.html", "cuda:3");
  CHECK(test_support::read_text(out.path / "empty.html").find("No memory events were recorded for cuda:3") !=
        std::string::npos);
}

// ---- the HTML page of a long timeline ----

namespace {

// Every number pair of a path's "d": its points.
std::vector<std::pair<double, double>> path_points(const std::string& d) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(d);
  std::string word;
  while (in >> word) {
    if (word == "Z") break;
    const double x = std::stod(word.substr(1));  // "M12.3" or "L12.3"
    std::string y;
    in >> y;
    out.emplace_back(x, std::stod(y));
  }
  return out;
}

std::string attribute(const std::string& html, const std::string& element_start, const std::string& name) {
  const auto at = html.find(element_start);
  REQUIRE(at != std::string::npos);
  const auto a = html.find(" " + name + "=\"", at);
  REQUIRE(a != std::string::npos);
  const auto from = a + name.size() + 3;
  return html.substr(from, html.find('"', from) - from);
}

// Values of the <text class="CLASS"> labels, in order.
std::vector<double> tick_values(const std::string& html, const std::string& cls) {
  std::vector<double> out;
  const std::string open = "<text class=\"" + cls + "\"";
  for (auto at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const auto from = html.find('>', at) + 1;
    out.push_back(std::stod(html.substr(from, html.find('<', from) - from)));
  }
  return out;
}

// A step of 1, 2 or 5 times a power of ten.
bool round_step(double step) {
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (std::fabs(mantissa - m) < 1e-6) return true;
  return false;
}

}  // namespace

TEST_CASE("a long timeline's page draws its envelope: points bounded by the columns, the peak kept, round ticks") {
  namespace d = proftrace::detail;
  // 300 steps of 333 samples (100k samples over 3 s): 64 MiB of parameters,
  // activations rising and falling in every step, and one temporary spike of
  // 512 MiB that lasts a single sample in step 150.
  d::memory_timeline t;
  const std::size_t samples = 300 * 333;
  const std::size_t spike = 150 * 333 + 100;
  constexpr std::int64_t mib = 1 << 20;
  const auto column_of = [](memory_category c) { return proftrace::timeline_index(c) + 1; };
  for (std::size_t i = 0; i < samples; ++i) {
    t.times_us.push_back(static_cast<std::int64_t>(i) * 30);
    std::vector<std::int64_t> row(proftrace::memory_category_count + 1, 0);
    row[column_of(memory_category::parameter)] = 64 * mib;
    row[column_of(memory_category::activation)] = static_cast<std::int64_t>(i % 333) * (mib / 8);
    if (i == spike) row[column_of(memory_category::temporary)] = 512 * mib;
    t.sizes.push_back(std::move(row));
  }
  const std::int64_t peak = 64 * mib + static_cast<std::int64_t>(spike % 333) * (mib / 8) + 512 * mib;
  const std::string html = d::timeline_html(t, -1, {peak, peak});

  // Width follows the page; the drawing scales from its viewBox.
  CHECK(attribute(html, "<svg", "width") == "100%");
  CHECK(attribute(html, "<svg", "viewBox") == "0 0 1200 520");
  CHECK(attribute(html, "<svg", "preserveAspectRatio") == "xMidYMid meet");
  CHECK(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\"") != std::string::npos);
  CHECK(html.find(" height=\"520\"") == std::string::npos);
  const auto columns = std::stoul(attribute(html, "<svg", "data-columns"));
  CHECK(columns <= 1200);
  CHECK(attribute(html, "<svg", "data-samples") == std::to_string(samples));

  // Each series: at most 2 points per column on its upper edge and 2 on its
  // lower edge, whatever the number of samples (100k here).
  double top_y = 1e9;
  std::size_t series = 0;
  for (auto at = html.find("<path class=\"series\""); at != std::string::npos;
       at = html.find("<path class=\"series\"", at + 1)) {
    ++series;
    const auto from = html.find(" d=\"", at) + 4;
    const auto points = path_points(html.substr(from, html.find('"', from) - from));
    CHECK(points.size() >= 4);
    CHECK(points.size() <= 4 * columns);
    for (const auto& [x, y] : points) top_y = std::min(top_y, y);
  }
  CHECK(series == 3);  // parameter, activation, temporary
  CHECK(html.size() < 400 * 1024);
  // The one-sample spike survives: the top of the envelope is the peak marker.
  CHECK(html.find("peak 588.50 MiB") != std::string::npos);
  CHECK(top_y == doctest::Approx(std::stod(attribute(html, "<circle", "cy"))).epsilon(1e-6));

  // Round ticks: MiB in steps of 1, 2 or 5 x 10^k from 0, covering the peak;
  // time in seconds (3 s) the same way.
  const auto ys = tick_values(html, "ytick"), xs = tick_values(html, "xtick");
  REQUIRE(ys.size() >= 3);
  REQUIRE(xs.size() >= 3);
  CHECK(ys.front() == 0);
  CHECK(xs.front() == 0);
  CHECK(round_step(ys[1] - ys[0]));
  CHECK(round_step(xs[1] - xs[0]));
  for (std::size_t i = 1; i < ys.size(); ++i) CHECK(ys[i] - ys[i - 1] == doctest::Approx(ys[1] - ys[0]));
  for (std::size_t i = 1; i < xs.size(); ++i) CHECK(xs[i] - xs[i - 1] == doctest::Approx(xs[1] - xs[0]));
  CHECK(ys.back() >= 588.5);
  CHECK(xs.back() >= 2.9);
  CHECK(html.find(">Time (s)</text>") != std::string::npos);
  CHECK(html.find(">Memory (MiB)</text>") != std::string::npos);
}

TEST_CASE("a short timeline's page keeps its steps exact at column resolution") {
  namespace d = proftrace::detail;
  d::memory_timeline t;
  t.times_us = {1000, 2000, 3000};
  const auto row = [](std::int64_t parameter) {
    std::vector<std::int64_t> r(proftrace::memory_category_count + 1, 0);
    r[proftrace::timeline_index(memory_category::parameter) + 1] = parameter;
    return r;
  };
  t.sizes = {row(1000), row(3000), row(2000)};
  const std::string html = d::timeline_html(t, -1, {3000, 3000});
  const auto from = html.find(" d=\"", html.find("<path class=\"series\"")) + 4;
  const auto points = path_points(html.substr(from, html.find('"', from) - from));
  // Three levels on the upper edge (two points each), one on the lower edge.
  CHECK(points.size() == 3 * 2 + 2);
  CHECK(html.find("peak 2.93 KiB at 1.000 ms") != std::string::npos);
  CHECK(html.find(">Time (ms)</text>") != std::string::npos);
}
