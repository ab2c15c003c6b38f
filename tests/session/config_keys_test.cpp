// The "key=value,..." configuration that proftrace_start(), the Fortran
// module and PROFTRACE_CONFIG share (lib/c_api/c_config.cpp) against the C++
// session options: every profile_options member a program without C++ can
// set has a key, every key sets what it says, and the error for an unknown
// key lists them all.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "c_api/c_config.hpp"
#include "formats/trace_formats.hpp"

namespace d = proftrace::detail;

namespace {

// profile_options' members, in declaration order. The structured binding
// below names each: a member added to profile_options stops this file from
// compiling until it is listed here and given a key (or a reason not to).
const std::vector<std::string> members = {
    "activities",    "schedule",   "on_trace_ready",       "record_shapes", "profile_memory",
    "with_stack",    "with_flops", "with_modules",         "counters",      "retain_events",
    "acc_events",    "cuda_profiler_gating", "overflow",   "ring_events",   "flush_period",
    "stream_format", "across_ranks", "trace_ranks",        "spool_dir",     "in_forked_child",
    "enabled",       "execution_trace_observer"};

[[maybe_unused]] void names_every_member(proftrace::profile_options& o) {
  [[maybe_unused]] auto& [activities, schedule, on_trace_ready, record_shapes, profile_memory, with_stack, with_flops,
                          with_modules, counters, retain_events, acc_events, cuda_profiler_gating, overflow,
                          ring_events, flush_period, stream_format, across_ranks, trace_ranks, spool_dir,
                          in_forked_child, enabled, execution_trace_observer] = o;
}

// Members a configuration string cannot carry: a C++ object.
const std::set<std::string> cxx_only = {"execution_trace_observer"};

d::c_config parsed(const std::string& text) {
  d::c_config c;
  std::string error;
  REQUIRE_MESSAGE(d::parse_config(text, c, error), error);
  return c;
}

std::string error_of(const std::string& text) {
  d::c_config c;
  std::string error;
  CHECK_FALSE(d::parse_config(text, c, error));
  return error;
}

}  // namespace

TEST_CASE("every session option a C, Fortran or environment user can set has a key, and no key sets another") {
  for (const std::string& m : members) {
    const auto keys = d::config_keys();
    const bool has_key = std::any_of(keys.begin(), keys.end(), [&](const d::config_key& k) { return k.option == m; });
    CHECK_MESSAGE(has_key != cxx_only.count(m), m);
  }
  for (const d::config_key& k : d::config_keys())
    CHECK_MESSAGE((k.option.empty() || std::count(members.begin(), members.end(), std::string(k.option)) == 1),
                  std::string(k.name));
}

TEST_CASE("an unknown key's message lists every key") {
  const std::string error = error_of("tabel");
  CHECK(error.find("unknown key 'tabel'") != std::string::npos);
  for (const d::config_key& k : d::config_keys())
    CHECK_MESSAGE(error.find(std::string(k.name)) != std::string::npos, std::string(k.name));
}

TEST_CASE("each key sets its option") {
  const auto c = parsed(
      "counters=task-clock+page-faults,overflow=block,ring_events=1024,retain_events,acc_events=1,modules,"
      "stream_format=pftrace,flush_period_ms=50,spool_dir=/tmp/spool,in_forked_child=fresh_session,enabled=0,"
      "cuda_profiler_gating=on,memory,shapes,stack,flops,table,out=traces,format=pftrace.gz,active=2,ranks,"
      "trace_ranks=0+7+100-131");
  const auto& o = c.opts;
  CHECK(o.counters == std::vector<std::string>{"task-clock", "page-faults"});
  CHECK(o.overflow == proftrace::overflow_policy::block);
  CHECK(o.ring_events == 1024);
  CHECK(o.retain_events);
  CHECK(o.acc_events);
  CHECK(o.with_modules);
  CHECK(o.stream_format == proftrace::trace_format::pftrace);
  CHECK(o.flush_period == std::chrono::milliseconds(50));
  CHECK(o.spool_dir == "/tmp/spool");
  CHECK(o.in_forked_child == proftrace::fork_child::fresh_session);
  CHECK_FALSE(o.enabled);
  CHECK(o.cuda_profiler_gating);
  CHECK((o.profile_memory && o.record_shapes && o.with_stack && o.with_flops));
  CHECK(c.table);
  CHECK(o.across_ranks);
  CHECK(o.trace_ranks == "0+7+100-131");
  CHECK(c.out_dir == "traces");
  CHECK(static_cast<bool>(o.schedule));
  CHECK(static_cast<bool>(o.on_trace_ready));
  const auto defaults = parsed("");
  CHECK(defaults.opts.counters.empty());
  CHECK_FALSE(defaults.opts.overflow.has_value());
  CHECK(defaults.opts.enabled);
  CHECK(defaults.out_dir == ".");
}

TEST_CASE("a bad value names its key and what it takes") {
  for (const char* bad : {"ring_events=100", "ring_events=32", "overflow=sometimes", "counters=", "counters=a++b",
                          "flush_period_ms=0", "stream_format=xml", "in_forked_child=maybe", "spool_dir=",
                          "enabled=perhaps", "ranks=all", "trace_ranks=", "trace_ranks=5-3", "trace_ranks=1+x",
                          "trace_ranks=-1", "stream_format=cali.json"}) {
    const std::string text(bad);
    const std::string key = text.substr(0, text.find('='));
    const std::string error = error_of(text);
    CHECK_MESSAGE(error.find("for key '" + key + "' (expected ") != std::string::npos, error);
  }
}

TEST_CASE("format= takes exactly the format table's names, and its message lists them all") {
  const auto keys = d::config_keys();
  const auto format = std::find_if(keys.begin(), keys.end(), [](const d::config_key& k) { return k.name == "format"; });
  REQUIRE(format != keys.end());
  CHECK(std::string(format->expected) == d::format_values());
  for (const d::format_row& f : d::trace_formats) {
    CHECK(d::parse_format_value(f.name));
    for (const d::compression_row& c : d::compressions)
      CHECK(d::parse_format_value(std::string(f.name) + std::string(c.suffix)).has_value() ==
            !(f.export_only || f.profile_only));
  }
  CHECK(d::parse_format_value("none")->format->format == proftrace::trace_format::none);
  CHECK_FALSE(d::parse_format_value(""));
  CHECK_FALSE(d::parse_format_value("gz"));
  CHECK_FALSE(d::parse_format_value("json.gz.zst"));
  CHECK_FALSE(d::parse_format_value("xjson"));
}
