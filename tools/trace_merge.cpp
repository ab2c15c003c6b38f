// `proftrace merge`: several ranks' traces into one timeline.
//
// Each input is read twice, streaming: once for its metadata
// (distributedInfo, clockAlignment, baseTimeNanoseconds: up to its first
// event, or all of it where the clock offset was measured again at stop,
// clockAlignmentAtStop, which follows the events), then event by event, each event cut out of the text of traceEvents, parsed
// alone, rewritten and written out. Memory holds one event at a time, and
// an event longer than max_event_bytes is refused rather than held (a gzip
// bomb or a corrupt trace would otherwise take all memory). The output is
// written beside MERGED and renamed over it only once complete.
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

#include <unistd.h>

#include "trace_merge.hpp"
#include "json_array_text.hpp"
#include <proftrace_trace_io/json_events_scanner.hpp>
#include <proftrace_trace_io/compression.hpp>
#include <proftrace_trace_io/kineto_json_reader.hpp>

namespace proftrace::tools {

namespace {

namespace io = boost::iostreams;
namespace pd = proftrace::detail;
namespace json = boost::json;


// The longest event text merge holds (see tools/README.md).
constexpr std::size_t max_event_bytes = std::size_t{16} << 20;

struct input {
  std::filesystem::path file;
  int rank = -1;
  std::string host;
  std::int64_t base_ns = 0;
  std::int64_t offset_ns = 0;  // this rank's clock minus rank 0's
  std::int64_t aligned_base_ns = 0;  // base_ns on rank 0's clock
  bool aligned = false;
  // The offset measured again at stop() (clockAlignmentAtStop): between the
  // two measurements' times (at_ns, this rank's clock) the offset is taken
  // to change linearly, the clocks' drift.
  std::int64_t at_ns = 0, stop_offset_ns = 0, stop_at_ns = 0;
  bool drift = false;
  // What to add to a time of this rank's clock (ns) beyond the start
  // offset: the drift since the first measurement. Never extrapolated: a
  // time outside the measured window takes the nearer measurement's offset
  // (a .pftrace's metadata sit at its time base, days before the window).
  double drift_correction_ns(double unix_ns) const noexcept {
    if (!drift) return 0;
    const double rate = static_cast<double>(stop_offset_ns - offset_ns) / static_cast<double>(stop_at_ns - at_ns);
    const double t = std::clamp(unix_ns, static_cast<double>(at_ns), static_cast<double>(stop_at_ns));
    return -rate * (t - static_cast<double>(at_ns));
  }
};

// Ranks merge can keep apart: a rank's processes get pids rank * 1000 + n (n < 1000)
// (int32, as trace_processor reads pids) and its ids move by rank << 40.
// Traces without a rank take the keys after these.
constexpr std::int64_t max_rank = 999'999;
constexpr std::int64_t unranked_key = max_rank + 1;
constexpr std::size_t max_processes_per_rank = 1000;

input read_header(const std::filesystem::path& file) {
  input in;
  in.file = file;
  read_options opts;
  opts.on_event = [](const trace_event&) { return false; };  // the metadata before traceEvents is enough,
  read_result header = read_trace(file, opts);
  const auto has = [](const read_result& r, std::string_view key) {
    return std::any_of(r.metadata.begin(), r.metadata.end(), [&](const auto& m) { return m.key == key; });
  };
  // unless the keys follow the events (Kineto's base may), or the offset
  // was measured again at stop, or only after MPI_Init, by a rank of an MPI
  // job whose session started before it (proftrace writes those after the
  // events): then all of it.
  const bool mpi_rank = std::any_of(header.metadata.begin(), header.metadata.end(), [](const auto& m) {
    return m.key == "distributedInfo.backend" && m.value == "mpi";
  });
  if (header.stopped && (!has(header, "baseTimeNanoseconds") || has(header, "clockAlignment.at_ns") ||
                         (mpi_rank && !has(header, "clockAlignment.offset_ns")))) {
    opts.on_event = [](const trace_event&) { return true; };
    header = read_trace(file, opts);
  }
  const auto integer = [&](const metadata_entry& m, std::int64_t lo, std::int64_t hi, const char* what) {
    const auto v = integer_value(m, lo, hi);
    if (!v)
      throw trace_error(file.string() + ": \"" + m.key + "\" is " + m.value + ", not " + what +
                        "; merge cannot place this trace's events");
    return *v;
  };
  std::string_view first_at;  // the at_ns of the first measurement
  bool has_first_at = false;
  for (const auto& m : header.metadata) {
    if (m.key == "distributedInfo.rank") in.rank = static_cast<int>(integer(m, 0, max_rank, "a rank from 0 to 999999"));
    else if (m.key == "distributedInfo.host" && m.type == json_type::string) in.host = m.value;
    else if (m.key == "baseTimeNanoseconds") in.base_ns = integer(m, INT64_MIN, INT64_MAX, "an integer of nanoseconds");
    // The offset measured at start, or else the one measured after MPI_Init.
    else if (!in.aligned && (m.key == "clockAlignment.offset_ns" || m.key == "clockAlignmentAfterMpiInit.offset_ns")) {
      in.offset_ns = integer(m, INT64_MIN, INT64_MAX, "an integer of nanoseconds");
      in.aligned = true;
      first_at = m.key == "clockAlignment.offset_ns" ? "clockAlignment.at_ns" : "clockAlignmentAfterMpiInit.at_ns";
    } else if (m.key == first_at) {
      in.at_ns = integer(m, INT64_MIN, INT64_MAX, "an integer of nanoseconds");
      has_first_at = true;
    } else if (m.key == "clockAlignmentAtStop.offset_ns") {
      in.stop_offset_ns = integer(m, INT64_MIN, INT64_MAX, "an integer of nanoseconds");
    } else if (m.key == "clockAlignmentAtStop.at_ns") {
      in.stop_at_ns = integer(m, INT64_MIN, INT64_MAX, "an integer of nanoseconds");
    }
  }
  // Both measurements, in order and apart, with a drift a clock can have
  // (under 1 ms per second; anything more is a bad reading, not a drift).
  if (in.aligned && has_first_at && has(header, "clockAlignmentAtStop.offset_ns") &&
      has(header, "clockAlignmentAtStop.at_ns") && in.stop_at_ns > in.at_ns) {
    const double span = static_cast<double>(in.stop_at_ns - in.at_ns);
    in.drift = std::fabs(static_cast<double>(in.stop_offset_ns - in.offset_ns)) < 1e-3 * span;
  }
  if (__builtin_sub_overflow(in.base_ns, in.offset_ns, &in.aligned_base_ns))
    throw trace_error(file.string() + ": baseTimeNanoseconds " + std::to_string(in.base_ns) + " minus its clock offset " +
                      std::to_string(in.offset_ns) + " is beyond 64-bit nanoseconds; merge cannot place this trace's events");
  return in;
}

// Calls fn(index, text) for each element of the top-level "traceEvents"
// array of `file` (kineto_json_reader). An element that is not an object,
// or whose text is longer than `max_bytes`, is an error naming its index:
// nothing longer is ever held.
template <class Fn>
void for_each_event_text(const std::filesystem::path& file, std::size_t max_bytes, Fn&& fn) {
  using scanner = pd::json_events_scanner;
  const std::string name = file.string();
  pd::kineto_json_reader reader({.on_event = fn, .on_member = {}}, {.max_piece = max_bytes});
  std::optional<pd::kineto_json_text> text;
  try {
    text.emplace(file);
  } catch (const std::runtime_error& e) {
    throw trace_error(e.what());
  }
  try {
    // A stream that fails ends the text where it failed: finish() says how.
    (void)reader.read(text->stream());
    if (reader.finish()) throw trace_error(name + ": the trace ends inside its JSON (cut off?)");
  } catch (const scanner::error& e) {
    const std::string event = name + ": event " + std::to_string(e.element);
    switch (e.what_kind) {
      case scanner::error::kind::element_not_object: throw trace_error(event + " is " + e.found + ", not an object");
      case scanner::error::kind::too_long:
        throw trace_error(event + " is longer than " + std::to_string(max_bytes >> 20) +
                          " MiB of JSON text; merge holds one event at a time and refuses larger ones "
                          "(a corrupt trace, or a decompression bomb?)");
      case scanner::error::kind::not_a_trace:
      case scanner::error::kind::invalid_structure: break;  // (merge does not ask for the structure check)
    }
    throw trace_error(name + ": " + e.what());
  }
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
    case json::kind::array:
      append_json_array(out, v.get_array(), [](std::string& o, const json::value& x) { append_json(o, x); });
      break;
    case json::kind::double_: {
      const double d = v.get_double();
      // JSON has no infinity: a number beyond a double's range (1e400)
      // parses as one and cannot be written back.
      if (!std::isfinite(d)) throw std::range_error("a number beyond the range of a double");
      char buf[64];
      if (std::fabs(d) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.3f", d);
        out += buf;
      } else {  // past the nanosecond's precision: the shortest exact text (1e+308, not 309 digits)
        const auto r = std::to_chars(buf, buf + sizeof buf, d);
        out.append(buf, r.ptr);
      }
      break;
    }
    default: out += json::serialize(v);
  }
}

// Moves an event's ts onto the merged clock: `shift_ns` (the input's
// aligned base less the merged base) plus the drift at that time; its dur
// by the drift between its start and end.
template <class Where>
void move_times(json::object& e, const input& in, std::int64_t shift_ns, const Where& where) {
  auto* ts = e.if_contains("ts");
  if (!ts || !ts->is_number()) return;
  const double own_us = ts->to_number<double>();
  const double begin_ns = static_cast<double>(in.base_ns) + own_us * 1000.0;  // on this rank's clock
  const double drift_ns = in.drift_correction_ns(begin_ns);
  const double us = own_us + (static_cast<double>(shift_ns) + drift_ns) / 1000.0;
  if (!std::isfinite(us))
    throw trace_error(where() + ": \"ts\" is beyond the range of a double (JSON cannot hold the merged value)");
  // To the nanosecond; a time too large for that (1e308) stays as it is.
  *ts = std::fabs(us) < 1e15 ? std::round(us * 1000.0) / 1000.0 : us;
  // The end moves by the drift at the end: a span stretches or shrinks
  // by the clocks' relative rate (a few ppm).
  if (auto* dur = e.if_contains("dur"); in.drift && dur && dur->is_number()) {
    const double d_us = dur->to_number<double>();
    const double end_drift_ns = in.drift_correction_ns(begin_ns + d_us * 1000.0);
    const double merged_dur = std::max(0.0, d_us + (end_drift_ns - drift_ns) / 1000.0);
    if (std::isfinite(merged_dur) && std::fabs(merged_dur) < 1e15) *dur = std::round(merged_dur * 1000.0) / 1000.0;
  }
}

// The inputs' headers, by rank, then a rank's traces (schedule cycles) in
// time order.
std::vector<input> read_headers(const std::vector<std::filesystem::path>& files) {
  std::vector<input> inputs;
  for (const auto& f : files) inputs.push_back(read_header(f));
  std::sort(inputs.begin(), inputs.end(), [](const input& a, const input& b) {
    if ((a.rank >= 0) != (b.rank >= 0)) return a.rank >= 0;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.base_ns != b.base_ns ? a.base_ns < b.base_ns : a.file < b.file;
  });
  return inputs;
}

// Distinct ranks; each trace without one counts alone.
std::uint64_t count_ranks(const std::vector<input>& inputs) {
  std::vector<int> ranks;
  for (const auto& in : inputs)
    if (in.rank >= 0) ranks.push_back(in.rank);
  std::sort(ranks.begin(), ranks.end());
  auto count = static_cast<std::uint64_t>(std::unique(ranks.begin(), ranks.end()) - ranks.begin());
  for (const auto& in : inputs) count += in.rank < 0;
  return count;
}

// What to add to every ts of `in` (as ns) to put it on the merged clock.
std::int64_t shift_onto(const input& in, std::int64_t base) {
  std::int64_t shift_ns = 0;
  if (__builtin_sub_overflow(in.aligned_base_ns, base, &shift_ns))
    throw trace_error(in.file.string() + ": its clock (baseTimeNanoseconds and clockAlignment) is more than 292 years after the "
                      "earliest input's; merge cannot place them on one timeline");
  return shift_ns;
}

// The merged file, written beside MERGED and renamed over it by commit(): a
// merge that fails (a bad input, a full disk) leaves an existing MERGED as
// it was.
class merged_output {
 public:
  explicit merged_output(const std::filesystem::path& output)
      : output_(output), temp_(output.string() + ".merging-" + std::to_string(::getpid())), cleanup_{temp_} {
    file_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!file_) throw trace_error(output.string() + ": cannot write: " + std::strerror(errno ? errno : EIO));
    pd::push_compressor(out_, pd::compression_of(output));
    out_.push(file_);
  }

  void begin(std::int64_t base, std::uint64_t ranks, std::size_t traces) {
    out_ << "{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " << base
         << ",\n  \"proftraceMerged\": {\"ranks\": " << ranks << ", \"traces\": " << traces << "},\n  \"traceEvents\": [\n";
  }

  // An element of traceEvents (the merged process names included).
  void write(const json::value& v) {
    text_buf_.clear();
    if (!first_) text_buf_ += ",\n";
    first_ = false;
    append_json(text_buf_, v);
    out_.write(text_buf_.data(), static_cast<std::streamsize>(text_buf_.size()));
    ++events_;
  }
  std::uint64_t events() const noexcept { return events_; }

  void commit() {
    out_ << "\n  ],\n  \"traceName\": " << json::serialize(json::value(output_.string())) << "\n}\n";
    out_.reset();
    file_.flush();
    if (!file_) throw trace_error(output_.string() + ": write failed: " + std::strerror(errno ? errno : EIO));
    file_.close();
    if (!file_) throw trace_error(output_.string() + ": write failed: " + std::strerror(errno ? errno : EIO));
    std::error_code ec;
    std::filesystem::rename(temp_, output_, ec);
    if (ec) throw trace_error(output_.string() + ": cannot write: " + ec.message());
    cleanup_.armed = false;
  }

 private:
  struct remove_on_failure {
    const std::filesystem::path& path;
    bool armed = true;
    ~remove_on_failure() {
      std::error_code ec;
      if (armed) std::filesystem::remove(path, ec);
    }
  };

  const std::filesystem::path& output_;
  std::filesystem::path temp_;
  remove_on_failure cleanup_;  // destroyed after the streams below: they are closed first
  std::ofstream file_;
  io::filtering_ostream out_;
  bool first_ = true;
  std::string text_buf_;
  std::uint64_t events_ = 0;
};

// A merged process. A rank's traces (one per schedule cycle) share them:
// the same program's process and devices, at later times. Their names are
// written after the events, once every cycle's steps are known.
struct process {
  std::int64_t pid = 0;
  std::string label;     // "rank 3 (host)", "rank 3 device 0", or a file name without a rank
  std::string original;  // the pid in its trace, as JSON text
  bool host = false;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // per cycle (host only)
};

struct process_table {
  std::vector<process> processes;
  std::map<std::int64_t, std::map<std::string, std::size_t>> pids_by_rank;  // rank key -> pid text -> processes index
};

// One input's events, rewritten onto the merged timeline and processes and
// written out.
class input_merge {
 public:
  input_merge(const input& in, std::int64_t rank_key, std::int64_t shift_ns, process_table& table, merged_output& out)
      : in_(in), rank_key_(rank_key), shift_ns_(shift_ns), table_(table), pids_(table.pids_by_rank[rank_key]), out_(out) {}

  void run() {
    for_each_event_text(in_.file, max_event_bytes,
                        [&](std::uint64_t index, std::string_view element) { event(index, element); });
    if (host_process_ != SIZE_MAX && first_step_ <= last_step_)
      table_.processes[host_process_].steps.emplace_back(first_step_, last_step_);
  }

 private:
  void event(std::uint64_t index, std::string_view element) {
    const auto where = [&] { return in_.file.string() + ": event " + std::to_string(index); };
    json::error_code ec;
    json::value v = json::parse(element, ec);
    if (ec) throw trace_error(where() + ": invalid JSON: " + ec.message());
    if (!v.is_object()) throw trace_error(where() + " is not an object");
    json::object& e = v.as_object();
    const auto* ph = e.if_contains("ph");
    const bool is_metadata = ph && ph->is_string() && ph->as_string() == "M";
    // The input's own process names give way to the merged ones.
    if (is_metadata && names_process(e)) {
      if (const auto* pid = e.if_contains("pid")) merged_pid(*pid);
      return;
    }
    if (ph && ph->is_string() && ph->as_string() == "X") note_step(e);
    if (auto* pid = e.if_contains("pid")) *pid = merged_pid(*pid);
    // Metadata ("M") have no time of their own: their ts stays as it is.
    if (!is_metadata) move_times(e, in_, shift_ns_, where);
    offset_ids(e);
    try {
      out_.write(v);
    } catch (const std::range_error& r) {
      throw trace_error(where() + ": " + r.what() + " (JSON cannot hold it)");
    }
  }

  static bool names_process(const json::object& e) {
    const auto* n = e.if_contains("name");
    return n && n->is_string() && (n->as_string() == "process_name" || n->as_string() == "process_sort_index");
  }

  // The cycle's steps, for the process name.
  void note_step(const json::object& e) {
    const auto* n = e.if_contains("name");
    if (!n || !n->is_string() || !n->as_string().starts_with("ProfilerStep#")) return;
    const auto digits = n->as_string().subview().substr(13);
    std::int64_t step = 0;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (err == std::errc{} && end == digits.data() + digits.size()) {
      first_step_ = std::min(first_step_, step);
      last_step_ = std::max(last_step_, step);
    }
  }

  // The merged pid of this input's `pid`; the first one seen is the host's
  // (proftrace writes it first).
  std::int64_t merged_pid(const json::value& pid) {
    const std::string key = json::serialize(pid);
    if (pids_.size() >= max_processes_per_rank && !pids_.contains(key))
      throw trace_error(in_.file.string() + ": " +
                        (in_.rank >= 0 ? "rank " + std::to_string(in_.rank) : std::string("this trace")) +
                        " has more than " + std::to_string(max_processes_per_rank) +
                        " processes (pids); merge numbers a rank's processes rank * 1000 + n");
    auto [it, fresh] = pids_.try_emplace(key, table_.processes.size());
    if (fresh) {
      process p;
      p.pid = rank_key_ * static_cast<std::int64_t>(max_processes_per_rank) + static_cast<std::int64_t>(pids_.size() - 1);
      p.host = host_process_ == SIZE_MAX;
      p.original = key;
      p.label = (in_.rank >= 0 ? "rank " + std::to_string(in_.rank) : in_.file.filename().string()) +
                (p.host ? (in_.host.empty() ? "" : " (" + in_.host + ")") : " device " + key);
      table_.processes.push_back(std::move(p));
    }
    if (host_process_ == SIZE_MAX) host_process_ = it->second;
    return table_.processes[it->second].pid;
  }

  // Flow ids and CUPTI correlations are per process: keep them apart per
  // rank. Only integers are moved (a fractional or huge id stays as it is).
  void offset_ids(json::object& e) const {
    const std::int64_t rank_bits = rank_key_ << 40;
    const auto offset_id = [&](json::value& id) {
      std::int64_t moved = 0;
      if (id.is_int64() && !__builtin_add_overflow(id.get_int64(), rank_bits, &moved)) id = moved;
      else if (id.is_uint64() && id.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX - rank_bits))
        id = static_cast<std::int64_t>(id.get_uint64()) + rank_bits;
    };
    if (auto* id = e.if_contains("id"); id && id->is_number()) offset_id(*id);
    if (auto* args = e.if_contains("args"); args && args->is_object())
      if (auto* c = args->as_object().if_contains("correlation"); c && c->is_number()) offset_id(*c);
  }

  const input& in_;
  std::int64_t rank_key_;
  std::int64_t shift_ns_;
  process_table& table_;
  std::map<std::string, std::size_t>& pids_;  // this input's rank's
  merged_output& out_;
  std::size_t host_process_ = SIZE_MAX;  // the first pid of this trace: the host
  std::int64_t first_step_ = INT64_MAX, last_step_ = INT64_MIN;
};

// A host process's label gets its cycles' steps: " steps 10-14, 20-24".
void add_steps_to_label(process& p) {
  if (p.steps.empty()) return;
  std::sort(p.steps.begin(), p.steps.end());
  p.label += " ";
  p.label += p.steps.size() == 1 && p.steps[0].first == p.steps[0].second ? "step" : "steps";
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    p.label += (i ? ", " : " ") + std::to_string(p.steps[i].first);
    if (p.steps[i].second != p.steps[i].first) p.label += "-" + std::to_string(p.steps[i].second);
  }
}

// Process names: the host's with its cycles' steps; unique (a rank whose
// traces came from different processes tells them apart by their pids).
void write_process_names(std::vector<process>& processes, merged_output& out) {
  std::map<std::string, int> seen;
  for (auto& p : processes) {
    add_steps_to_label(p);
    ++seen[p.label];
  }
  std::map<std::string, int> used;
  for (auto& p : processes) {
    std::string label = p.label;
    if (seen[p.label] > 1) label += " (pid " + p.original + ")";
    if (++used[label] > 1) label += " #" + std::to_string(used[label]);
    out.write(json::object{{"ph", "M"}, {"name", "process_name"}, {"pid", p.pid}, {"tid", 0},
                           {"args", json::object{{"name", label}}}});
    out.write(json::object{{"ph", "M"}, {"name", "process_sort_index"}, {"pid", p.pid}, {"tid", 0},
                           {"args", json::object{{"sort_index", p.pid}}}});
  }
}

}  // namespace

merge_result merge_traces(std::vector<std::filesystem::path> files, const std::filesystem::path& output) {
  if (!named_json(output))  // (the command line merges to JSON first for a .pftrace)
    throw trace_error(output.string() + ": unknown output format (.json, .json.gz, .json.zst)");
  const std::vector<input> inputs = read_headers(files);
  // The merged time base: the earliest aligned base, so no ts is negative.
  std::int64_t base = INT64_MAX;
  for (const auto& in : inputs) base = std::min(base, in.aligned_base_ns);

  merge_result result;
  result.ranks = count_ranks(inputs);
  merged_output out(output);
  out.begin(base, result.ranks, inputs.size());
  process_table table;
  for (std::size_t index = 0; index < inputs.size(); ++index) {
    const input& in = inputs[index];
    const std::int64_t rank_key = in.rank >= 0 ? in.rank : unranked_key + static_cast<std::int64_t>(index);
    input_merge(in, rank_key, shift_onto(in, base), table, out).run();
    ++result.traces;
    if (!in.aligned) ++result.unaligned;
    if (in.drift) ++result.drift_corrected;
  }
  write_process_names(table.processes, out);
  result.events = out.events();
  out.commit();
  return result;
}

}  // namespace proftrace::tools
