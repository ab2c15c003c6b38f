// `proftrace merge`: several ranks' traces into one timeline.
//
// Each input is read twice, streaming: once up to its first event for its
// metadata (distributedInfo, clockAlignment, baseTimeNanoseconds), then
// event by event, each event cut out of the text of traceEvents, parsed
// alone, rewritten and written out. Memory holds one event at a time.
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "trace_reader.hpp"

namespace proftrace::tools {

namespace {

namespace io = boost::iostreams;
namespace json = boost::json;

bool has_suffix(const std::string& s, std::string_view suffix) { return s.ends_with(suffix); }

struct input {
  std::filesystem::path file;
  int rank = -1;
  std::string host;
  std::int64_t base_ns = 0;
  std::int64_t offset_ns = 0;  // this rank's clock minus rank 0's
  bool aligned = false;
};

input read_header(const std::filesystem::path& file) {
  input in;
  in.file = file;
  read_options opts;
  opts.on_event = [](const trace_event&) { return false; };  // the metadata before traceEvents is enough
  for (const auto& m : read_trace(file, opts).metadata) {
    if (m.key == "distributedInfo.rank" && m.type == json_type::number) in.rank = std::atoi(m.value.c_str());
    else if (m.key == "distributedInfo.host" && m.type == json_type::string) in.host = m.value;
    else if (m.key == "baseTimeNanoseconds" && m.type == json_type::number) in.base_ns = std::atoll(m.value.c_str());
    else if (m.key == "clockAlignment.offset_ns" && m.type == json_type::number) {
      in.offset_ns = std::atoll(m.value.c_str());
      in.aligned = true;
    }
  }
  return in;
}

// Calls fn(text) for each element of the top-level "traceEvents" array of
// the JSON read from `in`, tracking only strings and nesting.
template <class Fn>
void for_each_event_text(std::istream& in, const std::string& name, Fn&& fn) {
  std::vector<char> buf(1 << 20);
  int depth = 0;
  bool in_string = false, escaped = false, in_events = false, after_events_key = false;
  std::string token, element;
  std::string last_key;  // the last string completed at depth 1
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) {
      const char c = buf[static_cast<std::size_t>(i)];
      if (in_events && depth >= 3) element += c;
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
        else if (depth == 1 && token.size() < 64) token += c;
        if (!in_string && depth == 1) last_key = token;
        continue;
      }
      switch (c) {
        case '"':
          in_string = true;
          token.clear();
          break;
        case ':':
          if (depth == 1) after_events_key = last_key == "traceEvents";
          break;
        case '{':
        case '[':
          ++depth;
          if (depth == 2 && c == '[' && after_events_key) in_events = true;
          if (in_events && depth == 3) element.assign(1, c);
          break;
        case '}':
        case ']':
          if (in_events && depth == 3) fn(element);
          if (in_events && depth == 2) in_events = false;
          --depth;
          break;
        default: break;
      }
    }
  }
  if (depth != 0) throw trace_error(name + ": the trace ends inside its JSON (cut off?)");
}

// JSON text of `v` as Kineto writes it: doubles with three decimals (times
// in microseconds to the nanosecond), everything else as Boost.JSON does.
void append_json(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.get_object()) {
        if (!first) out += ", ";
        first = false;
        out += json::serialize(json::value(k));
        out += ": ";
        append_json(out, x);
      }
      out += '}';
      break;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& x : v.get_array()) {
        if (!first) out += ", ";
        first = false;
        append_json(out, x);
      }
      out += ']';
      break;
    }
    case json::kind::double_: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f", v.get_double());
      out += buf;
      break;
    }
    default: out += json::serialize(v);
  }
}

}  // namespace

merge_result merge_traces(std::vector<std::filesystem::path> files, const std::filesystem::path& output) {
  std::vector<input> inputs;
  for (const auto& f : files) inputs.push_back(read_header(f));
  std::sort(inputs.begin(), inputs.end(), [](const input& a, const input& b) {
    if ((a.rank >= 0) != (b.rank >= 0)) return a.rank >= 0;
    return a.rank != b.rank ? a.rank < b.rank : a.file < b.file;
  });
  // The merged time base: the earliest aligned base, so no ts is negative.
  std::int64_t base = INT64_MAX;
  for (const auto& in : inputs) base = std::min(base, in.base_ns - in.offset_ns);

  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  if (!file) throw trace_error(output.string() + ": cannot write: " + std::strerror(errno ? errno : EIO));
  io::filtering_ostream out;
  const std::string out_name = output.filename().string();
  if (has_suffix(out_name, ".gz")) out.push(io::gzip_compressor(io::gzip_params(io::zlib::best_speed)), 1 << 16);
  else if (has_suffix(out_name, ".zst")) out.push(io::zstd_compressor(io::zstd_params(io::zstd::best_speed)), 1 << 16);
  out.push(file);

  merge_result result;
  out << "{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " << base
      << ",\n  \"proftraceMerged\": {\"ranks\": " << inputs.size() << "},\n  \"traceEvents\": [\n";
  bool first = true;
  std::string text_buf;
  const auto write = [&](const json::value& v) {
    text_buf.clear();
    if (!first) text_buf += ",\n";
    first = false;
    append_json(text_buf, v);
    out.write(text_buf.data(), static_cast<std::streamsize>(text_buf.size()));
  };
  for (std::size_t index = 0; index < inputs.size(); ++index) {
    const input& in = inputs[index];
    const std::int64_t rank_key = in.rank >= 0 ? in.rank : static_cast<std::int64_t>(1000 + index);
    const std::int64_t shift_ns = in.base_ns - in.offset_ns - base;  // add to every ts of this input (as ns)
    std::map<std::string, std::int64_t> pids;  // this input's pids, in order of appearance, to merged pids
    const auto merged_pid = [&](const json::value& pid) {
      const std::string key = json::serialize(pid);
      auto [it, fresh] = pids.try_emplace(key, rank_key * 1000 + static_cast<std::int64_t>(pids.size()));
      if (fresh) {
        const bool host = pids.size() == 1;  // the host process comes first in proftrace's traces
        const std::string label = (in.rank >= 0 ? "rank " + std::to_string(in.rank) : in.file.filename().string()) +
                                  (host ? (in.host.empty() ? "" : " (" + in.host + ")") : " device " + key);
        write(json::object{{"ph", "M"}, {"name", "process_name"}, {"pid", it->second}, {"tid", 0},
                           {"args", json::object{{"name", label}}}});
        write(json::object{{"ph", "M"}, {"name", "process_sort_index"}, {"pid", it->second}, {"tid", 0},
                           {"args", json::object{{"sort_index", it->second}}}});
      }
      return it->second;
    };
    std::ifstream source(in.file, std::ios::binary);
    io::filtering_istream text;
    const std::string name = in.file.filename().string();
    if (has_suffix(name, ".gz")) text.push(io::gzip_decompressor());
    else if (has_suffix(name, ".zst")) text.push(io::zstd_decompressor());
    text.push(source);
    for_each_event_text(text, in.file.string(), [&](const std::string& element) {
      json::error_code ec;
      json::value v = json::parse(element, ec);
      if (ec || !v.is_object()) throw trace_error(in.file.string() + ": an event that is not a JSON object");
      json::object& e = v.as_object();
      // The input's own process names give way to the merged ones.
      if (const auto* ph = e.if_contains("ph"); ph && ph->is_string() && ph->as_string() == "M") {
        const auto* n = e.if_contains("name");
        if (n && n->is_string() && (n->as_string() == "process_name" || n->as_string() == "process_sort_index")) {
          if (const auto* pid = e.if_contains("pid")) merged_pid(*pid);
          return;
        }
      }
      if (auto* pid = e.if_contains("pid")) *pid = merged_pid(*pid);
      if (auto* ts = e.if_contains("ts"); ts && ts->is_number()) {
        const double us = ts->to_number<double>() + static_cast<double>(shift_ns) / 1000.0;
        *ts = std::round(us * 1000.0) / 1000.0;
      }
      // Flow ids and CUPTI correlations are per process: keep them apart per rank.
      if (auto* id = e.if_contains("id"); id && id->is_number())
        *id = (rank_key << 40) + id->to_number<std::int64_t>();
      if (auto* args = e.if_contains("args"); args && args->is_object())
        if (auto* c = args->as_object().if_contains("correlation"); c && c->is_number())
          *c = (rank_key << 40) + c->to_number<std::int64_t>();
      write(v);
      ++result.events;
    });
    ++result.traces;
    if (!in.aligned) ++result.unaligned;
  }
  out << "\n  ],\n  \"traceName\": " << json::serialize(json::value(output.string())) << "\n}\n";
  out.reset();
  file.flush();
  if (!file) throw trace_error(output.string() + ": write failed: " + std::strerror(errno ? errno : EIO));
  return result;
}

}  // namespace proftrace::tools
