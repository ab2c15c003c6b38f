// The "key=value,..." configuration of proftrace_start(), the Fortran
// module's proftrace_start and PROFTRACE_CONFIG: one table of keys, each
// naming the profile_options member it sets, so that the three take the
// same options with the same names as C++ (tests/c_api/c_api_test.cpp holds the
// table against profile_options).
#include <charconv>
#include <stdexcept>
#include <string>

#include "c_config.hpp"
#include "proftrace/schedule.hpp"
#include "session/tensorboard_handler.hpp"
#include "session/trace_ranks.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct config_state {
  c_config& out;
  schedule_args sched{};
  bool has_schedule = false;
  std::string format = "json";
};

namespace {

bool parse_count(std::string_view v, std::int64_t& out) {
  if (v.empty()) return false;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return r.ec == std::errc() && r.ptr == v.data() + v.size() && out >= 0;
}

// A switch: "memory" alone, or memory=1|0|true|false|on|off|yes|no.
bool parse_flag(std::string_view v, bool has_value, bool& out) {
  if (!has_value) return out = true;
  if (v == "1" || v == "true" || v == "on" || v == "yes") return out = true;
  if (v == "0" || v == "false" || v == "off" || v == "no") {
    out = false;
    return true;
  }
  return false;
}

template <bool profile_options::*member>
bool set_flag(config_state& s, std::string_view v, bool has_value) {
  return parse_flag(v, has_value, s.out.opts.*member);
}

template <std::int64_t schedule_args::*member>
bool set_schedule(config_state& s, std::string_view v, bool) {
  s.has_schedule = true;
  return parse_count(v, s.sched.*member);
}

// active=0 is refused here, so an active of 0 when the schedule is
// finished means the key was never given.
bool set_active(config_state& s, std::string_view v, bool has_value) {
  return set_schedule<&schedule_args::active>(s, v, has_value) && s.sched.active >= 1;
}

bool set_out(config_state& s, std::string_view v, bool) {
  s.out.out_dir = std::string(v);
  return !v.empty();
}

bool set_format(config_state& s, std::string_view v, bool) {
  s.format = std::string(v);
  return parse_format_value(v).has_value();
}

bool set_table(config_state& s, std::string_view v, bool has_value) { return parse_flag(v, has_value, s.out.table); }

bool set_cuda(config_state& s, std::string_view v, bool has_value) {
  bool cuda = false;
  if (!parse_flag(v, has_value, cuda)) return false;
  s.out.opts.activities = cuda ? activity_set{activity::cpu, activity::cuda} : activity_set{};
  return true;
}

// counters=cycles+instructions: '+' between names, as ',' ends the key.
bool set_counters(config_state& s, std::string_view v, bool) {
  auto& names = s.out.opts.counters;
  names.clear();
  while (!v.empty()) {
    const std::size_t plus = v.find('+');
    const std::string_view name = v.substr(0, plus);
    if (name.empty()) return false;
    names.emplace_back(name);
    v = plus == std::string_view::npos ? std::string_view() : v.substr(plus + 1);
  }
  return !names.empty();
}

bool set_overflow(config_state& s, std::string_view v, bool) {
  if (v == "drop") s.out.opts.overflow = overflow_policy::drop;
  else if (v == "block") s.out.opts.overflow = overflow_policy::block;
  else if (v == "drop_oldest") s.out.opts.overflow = overflow_policy::drop_oldest;
  else return false;
  return true;
}

bool set_ring_events(config_state& s, std::string_view v, bool) {
  std::int64_t n = 0;
  if (!parse_count(v, n) || n < 64 || n > (std::int64_t{1} << 30) || (n & (n - 1)) != 0) return false;
  s.out.opts.ring_events = static_cast<std::uint32_t>(n);
  return true;
}

bool set_flush_period(config_state& s, std::string_view v, bool) {
  std::int64_t ms = 0;
  if (!parse_count(v, ms) || ms < 1 || ms > 3'600'000) return false;
  s.out.opts.flush_period = std::chrono::milliseconds(ms);
  return true;
}

bool set_stream_format(config_state& s, std::string_view v, bool) {
  auto& f = s.out.opts.stream_format;
  if (v == "automatic") {
    f = trace_format::automatic;
    return true;
  }
  for (const format_row& row : trace_formats) {
    if (v == row.name && !row.export_only) {
      f = row.format;
      return true;
    }
  }
  return false;
}

// trace_ranks=0+7+100-131: '+' between ranks, as ',' ends the key.
bool set_trace_ranks(config_state& s, std::string_view v, bool) {
  s.out.opts.trace_ranks = std::string(v);
  return parse_rank_list(v).has_value();
}

bool set_spool_dir(config_state& s, std::string_view v, bool) {
  s.out.opts.spool_dir = std::string(v);
  return !v.empty();
}

bool set_in_forked_child(config_state& s, std::string_view v, bool) {
  if (v == "profiling_off") s.out.opts.in_forked_child = fork_child::profiling_off;
  else if (v == "fresh_session") s.out.opts.in_forked_child = fork_child::fresh_session;
  else return false;
  return true;
}

constexpr const char* flag = "nothing, or 1/0";
constexpr const char* count = "a whole number >= 0";

constexpr config_key table[] = {
    {"out", "on_trace_ready", "a directory: out=DIR", set_out},
    {"format", "on_trace_ready", "json, json.gz, json.zst, pftrace, pftrace.gz, pftrace.zst, otf2, cali.json or none", set_format},
    {"table", "", flag, set_table},
    {"skip_first", "schedule", count, set_schedule<&schedule_args::skip_first>},
    {"wait", "schedule", count, set_schedule<&schedule_args::wait>},
    {"warmup", "schedule", count, set_schedule<&schedule_args::warmup>},
    {"active", "schedule", "a whole number >= 1", set_active},
    {"repeat", "schedule", count, set_schedule<&schedule_args::repeat>},
    {"cuda", "activities", flag, set_cuda},
    {"shapes", "record_shapes", flag, set_flag<&profile_options::record_shapes>},
    {"memory", "profile_memory", flag, set_flag<&profile_options::profile_memory>},
    {"stack", "with_stack", flag, set_flag<&profile_options::with_stack>},
    {"flops", "with_flops", flag, set_flag<&profile_options::with_flops>},
    {"modules", "with_modules", flag, set_flag<&profile_options::with_modules>},
    {"counters", "counters", "perf event names joined by '+': counters=cycles+instructions", set_counters},
    {"retain_events", "retain_events", flag, set_flag<&profile_options::retain_events>},
    {"acc_events", "acc_events", flag, set_flag<&profile_options::acc_events>},
    {"cuda_profiler_gating", "cuda_profiler_gating", flag, set_flag<&profile_options::cuda_profiler_gating>},
    {"overflow", "overflow", "drop, block or drop_oldest", set_overflow},
    {"ring_events", "ring_events", "a power of two from 64 to 2^30", set_ring_events},
    {"flush_period_ms", "flush_period", "milliseconds from 1 to 3600000", set_flush_period},
    {"stream_format", "stream_format", "automatic, json, pftrace or none", set_stream_format},
    {"ranks", "across_ranks", flag, set_flag<&profile_options::across_ranks>},
    {"trace_ranks", "trace_ranks", "ranks and ranges joined by '+': trace_ranks=0+7+100-131", set_trace_ranks},
    {"spool_dir", "spool_dir", "a directory: spool_dir=DIR", set_spool_dir},
    {"in_forked_child", "in_forked_child", "profiling_off or fresh_session", set_in_forked_child},
    {"enabled", "enabled", flag, set_flag<&profile_options::enabled>},
};

std::string known_keys() {
  std::string known;
  for (const config_key& k : table) known += (known.empty() ? "" : ", ") + std::string(k.name);
  return known;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// One "key[=value]" item into `s`, blanks around the key and the value
// ignored; false with `error` set otherwise.
bool apply_item(config_state& s, std::string_view item, std::string& error) {
  const std::size_t eq = item.find('=');
  const std::string_view key = trimmed(item.substr(0, eq));
  const bool has_value = eq != std::string_view::npos;
  const std::string_view value = has_value ? trimmed(item.substr(eq + 1)) : std::string_view();
  for (const config_key& k : table) {
    if (k.name != key) continue;
    if (k.apply(s, value, has_value)) return true;
    error = "bad value '" + std::string(value) + "' for key '" + std::string(key) + "' (expected " + k.expected + ")";
    return false;
  }
  error = "unknown key '" + std::string(key) + "' (known: " + known_keys() + ")";
  return false;
}

// The schedule and the trace handler the items named.
bool finish_config(config_state& s, std::string& error) {
  if (s.has_schedule) {
    if (s.sched.active == 0) {
      error = "a schedule needs active=N with N >= 1 (skip_first, wait, warmup or repeat was given without it)";
      return false;
    }
    try {
      s.out.opts.schedule = schedule(s.sched);
    } catch (const std::invalid_argument& e) {  // a cycle too long for 64 bits: the schedule's own message
      error = e.what();
      return false;
    }
  }
  const trace_name n = *parse_format_value(s.format);  // set_format accepted it
  s.out.opts.on_trace_ready = tensorboard_handler{s.out.out_dir, {}, n.format->format, n.compressed};
  return true;
}

}  // namespace

std::span<const config_key> config_keys() noexcept { return table; }

bool parse_config(std::string_view text, c_config& out, std::string& error) {
  out = c_config{};
  out.out_dir = ".";
  config_state state{out};
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trimmed(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (!item.empty() && !apply_item(state, item, error)) return false;
  }
  return finish_config(state, error);
}

}  // namespace proftrace::detail
