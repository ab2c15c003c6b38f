// PROF_SCOPE_DYNAMIC and PROF_ARG end to end: runtime names aggregate by
// their text, args of every type reach both trace formats, nothing is
// evaluated while not recording, and a name past the maximum is cut on a
// UTF-8 boundary and counted.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <map>
#include <string>
#include <thread>
#include <variant>

#include <proftrace/proftrace.hpp>

#include "test_support.hpp"
#include "formats/perfetto/perfetto_reader.hpp"

using test_support::events_named;
using test_support::read_trace;
using test_support::temp_dir;

namespace {

// Names built in fresh buffers on each call, from two threads.
void layers(int n) {
  for (int i = 0; i < n; ++i) {
    std::string name = "layer ";
    name += std::to_string(i % 2);
    PROF_SCOPE_DYNAMIC(name);
    PROF_ARG("i", i);
    PROF_ARG("scale", 0.5);
    PROF_ARG("kind", i % 2 ? "odd" : std::string("even").c_str());
    { PROF_SCOPE("inner"); }
  }
}

int evaluations = 0;
int counted() { return ++evaluations; }

struct pftrace_slice {
  int count = 0;
  std::map<std::string, proftrace::detail::decoded_value> args;
  int annotations = 0;  // args as written, a key given twice counted twice
};
std::map<std::string, pftrace_slice> read_pftrace(const std::filesystem::path& file) {
  std::map<std::string, pftrace_slice> out;
  proftrace::detail::perfetto_callbacks cb;
  cb.on_event = [&](const proftrace::detail::decoded_event& e) {
    if (e.type == proftrace::detail::decoded_event::kind::slice) {
      auto& s = out[e.name];
      ++s.count;
      for (const auto& a : e.args) s.args[a.name] = a.value;
      s.annotations += static_cast<int>(e.args.size());
    }
    return true;
  };
  proftrace::detail::read_perfetto(file, cb);
  return out;
}

}  // namespace

TEST_CASE("PROF_SCOPE_DYNAMIC and PROF_ARG: one row per text, args in JSON and .pftrace, in both stream formats") {
  for (const auto format : {proftrace::trace_format::automatic, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("dynamic");
    evaluations = 0;
    PROF_ARG("not recording", counted());
    { PROF_SCOPE_DYNAMIC(std::string("before")); PROF_ARG("n", counted()); }
    CHECK(evaluations == 0);
    proftrace::profile p({.stream_format = format});
    p.start();
    std::thread t([] { layers(6); });
    layers(4);
    t.join();
    {
      std::string long_name(proftrace::detail::max_dynamic_name_bytes - 1, 'x');
      long_name += "\xC3\xA9 and more";  // a 2-byte character across the limit
      PROF_SCOPE_DYNAMIC(long_name);
    }
    p.stop();
    std::map<std::string, std::int64_t> rows;
    for (const auto& row : p.key_averages()) rows[row.key] += row.count;
    CHECK(rows["layer 0"] == 5);
    CHECK(rows["layer 1"] == 5);
    CHECK(rows["inner"] == 10);
    CHECK(rows.count("before") == 0);
    CHECK(rows[std::string(proftrace::detail::max_dynamic_name_bytes - 1, 'x')] == 1);

    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    const auto odd = events_named(trace, "layer 1");
    REQUIRE(odd.size() == 5);
    for (const auto& e : odd) {
      const auto& args = e.at("args").as_object();
      CHECK(args.at("i").as_int64() % 2 == 1);
      CHECK(args.at("scale").as_double() == 0.5);
      CHECK(args.at("kind").as_string() == "odd");
      CHECK(e.at("cat").as_string() == "user_annotation");
    }
    const auto even = events_named(trace, "layer 0");
    REQUIRE(even.size() == 5);
    CHECK(even[0].at("args").as_object().at("kind").as_string() == "even");
    for (const auto& e : events_named(trace, "inner")) CHECK(!e.at("args").as_object().contains("i"));
    CHECK(events_named(trace, "before").empty());
    CHECK(events_named(trace, std::string(proftrace::detail::max_dynamic_name_bytes - 1, 'x')).size() == 1);
    if (format == proftrace::trace_format::automatic) {
      const auto& counters = trace.at("proftrace").as_object();
      CHECK(counters.at("truncated_names").as_int64() == 1);
      CHECK(counters.at("dropped_args").as_int64() == 0);
    }

    p.export_chrome_trace(out.path / "t.pftrace");
    const auto slices = read_pftrace(out.path / "t.pftrace");
    REQUIRE(slices.count("layer 1"));
    CHECK(slices.at("layer 1").count == 5);
    CHECK(slices.at("layer 0").count == 5);
    const auto& a = slices.at("layer 1").args;
    REQUIRE(a.count("i"));
    REQUIRE(a.count("scale"));
    REQUIRE(a.count("kind"));
    CHECK(std::get<std::int64_t>(a.at("i")) % 2 == 1);
    CHECK(std::get<double>(a.at("scale")) == 0.5);
    CHECK(std::get<std::string>(a.at("kind")) == "odd");
  }
}

TEST_CASE("PROF_SCOPE_DYNAMIC: with_stack frames show the runtime name") {
  temp_dir out("dynamic-stack");
  proftrace::profile p({.with_stack = true});
  p.start();
  {
    const std::string name = std::string("solver ") + "cg";
    PROF_SCOPE_DYNAMIC(name);
    { PROF_SCOPE("leaf"); }
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto leaf = events_named(read_trace(out.path / "t.json"), "leaf");
  REQUIRE(leaf.size() == 1);
  const std::string stack(leaf[0].at("args").as_object().at("Call stack").as_string());
  CHECK(stack.find("): solver cg") != std::string::npos);
  CHECK(stack.find("dynamic scope") == std::string::npos);
}

TEST_CASE("PROF_SCOPE_DYNAMIC with an empty name: one empty-named row and event, as proftrace_push(\"\")") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("dynamic-empty");
    proftrace::profile p({.stream_format = format});
    p.start();
    for (int i = 0; i < 2; ++i) {
      const std::string empty;
      PROF_SCOPE_DYNAMIC(empty);
      PROF_SCOPE_DYNAMIC(std::string_view());
    }
    p.stop();
    const auto rows = p.key_averages().rows;
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].key.empty());
    CHECK(rows[0].count == 4);
    p.export_chrome_trace(out.path / "t.json");
    CHECK(events_named(read_trace(out.path / "t.json"), "").size() == 4);
  }
}

TEST_CASE("PROF_ARG with a key given again: its last value, one key in JSON and in .pftrace, the 16 still fit") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("arg-again");
    proftrace::profile p({.stream_format = format});
    p.start();
    {
      PROF_SCOPE("solve");
      for (int i = 0; i < 40; ++i) PROF_ARG("iteration", i);  // one key, its last value
      PROF_ARG("residual", 0.5);
      PROF_ARG("residual", "converged");                          // another type replaces it too
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const std::string text = test_support::read_text(out.path / "t.json");
    CHECK(text.find("\"iteration\": 39") != std::string::npos);
    CHECK(text.find("\"iteration\": 38") == std::string::npos);
    const auto trace = read_trace(out.path / "t.json");
    const auto solve = events_named(trace, "solve");
    REQUIRE(solve.size() == 1);
    const auto& args = solve[0].at("args").as_object();
    CHECK(args.at("iteration").as_int64() == 39);
    CHECK(args.at("residual").as_string() == "converged");
    CHECK(trace.at("proftrace").as_object().at("dropped_args").as_int64() == 0);
    p.export_chrome_trace(out.path / "t.pftrace");
    const auto slices = read_pftrace(out.path / "t.pftrace");
    REQUIRE(slices.count("solve"));
    CHECK(slices.at("solve").args.count("iteration"));
    CHECK(slices.at("solve").annotations == 3);  // External id, iteration, residual
  }
}

TEST_CASE("PROF_ARG with a 64-bit unsigned value past INT64_MAX keeps it, in JSON and in .pftrace") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("arg-unsigned");
    proftrace::profile p({.stream_format = format});
    p.start();
    {
      PROF_SCOPE("hash");
      PROF_ARG("seed", std::uint64_t{0x9e3779b97f4a7c15});
      PROF_ARG("max", ~std::uint64_t{0});
      PROF_ARG("small", std::uint64_t{7});
      PROF_ARG("negative", std::int64_t{-3});
      enum class wide : std::uint64_t { top = ~std::uint64_t{0} };
      PROF_ARG("enum", wide::top);  // by its underlying type
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const std::string text = test_support::read_text(out.path / "t.json");
    CHECK(text.find("\"seed\": 11400714819323198485") != std::string::npos);
    CHECK(text.find("\"max\": 18446744073709551615") != std::string::npos);
    CHECK(text.find("\"small\": 7") != std::string::npos);
    CHECK(text.find("\"negative\": -3") != std::string::npos);
    CHECK(text.find("\"enum\": 18446744073709551615") != std::string::npos);
    p.export_chrome_trace(out.path / "t.pftrace");
    const auto slices = read_pftrace(out.path / "t.pftrace");
    REQUIRE(slices.count("hash"));
    const auto& args = slices.at("hash").args;
    REQUIRE(args.count("seed"));
    CHECK(std::get<std::uint64_t>(args.at("seed")) == 0x9e3779b97f4a7c15u);
    CHECK(std::get<std::uint64_t>(args.at("max")) == ~std::uint64_t{0});
    CHECK(std::get<std::int64_t>(args.at("negative")) == -3);
  }
}
