// Internal: a trace window's records as Kineto's JSON ("traceEvents").
//
// The window calls one method per finished record; the text accumulates in
// buffer() until the window commits it to the spool, where head() opened
// the object and tail() (rewritten at every commit) closes it.
//
//   kineto_json_writer w(head);
//   file = trace_file(path, w.head(), tail);
//   w.scope(ts, s, end_ns);              // {"ph": "X", ...}
//   w.leaves(ts, run);                   // the same, for each of a run of leaf scopes
//   file.commit(w.buffer(), tail); w.buffer().clear();
#pragma once

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "formats/json_text.hpp"
#include "formats/recent_cache.hpp"
#include "formats/trace_writer.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class kineto_json_writer : pinned_writer {  // stage_end_ points into stage_
 public:
  static constexpr trace_format format = trace_format::json;
  explicit kineto_json_writer(const trace_head& head);

  // The text before the first event: the object's members and "traceEvents": [
  std::string head() const;
  // The text after the last event: late metadata, proftrace's counters, traceName.
  static std::string tail(const finished_trace& f, const std::string& trace_name);

  void thread(std::int64_t tid, const std::string& name);
  void thread_done(std::int64_t) {}  // a thread's prefixes are kept: a few hundred bytes
  void scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns);
  void leaves(thread_state& ts, std::span<const closed_leaf> run);
  void async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid);
  void withdrawn(std::int64_t, const open_scope&, std::int64_t) {}  // JSON writes a scope whole, at its end
  void memory(const memory_event& m);
  void instant(std::int64_t tid, const site& where, std::int64_t ns);
  void counter(std::int64_t tid, const site& where, std::int64_t ns, double value);
  void gpu(const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans);

  // The text so far, all of it (the short path's staged events appended
  // first). Everything but that path writes through this.
  std::string& buffer() {
    sync();
    return buffer_;
  }

 private:
  void begin_event();
  void process_metadata();
  const std::string& complete_prefix(const site& where);
  // The same with the tid and the "ts" key after it: a thread's scopes of one
  // site start with the same bytes, copied as one fixed-size block.
  static constexpr std::size_t short_prefix_max = 128;
  struct short_prefix {
    char bytes[short_prefix_max];
    std::size_t size = 0;  // 0: too long for the short path
  };
  const short_prefix& complete_prefix(const site& where, std::int64_t tid) {
    const std::pair<const site*, std::int64_t> k{&where, tid};
    const short_prefix* p = recent_prefixes_.find(k, recent_slot_hash(&where, tid));
    return PROFTRACE_LIKELY(p != nullptr) ? *p : new_prefix(k);
  }
  const short_prefix& new_prefix(const std::pair<const site*, std::int64_t>& k);
  bool short_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns);
  void sync() {
    if (stage_end_ != stage_) buffer_.append(stage_, static_cast<std::size_t>(stage_end_ - stage_));
    stage_end_ = stage_;
  }
  void scope_args(const thread_state& ts, const open_scope& s);
  void shapes_and_flops(std::span<const std::int64_t> shapes, std::int64_t flops);
  void user_args(const std::vector<scope_arg>& args);
  void open_event(std::string_view ph_and_cat, std::string_view name, std::int64_t tid, std::int64_t ns);

  const trace_head& head_;
  std::string buffer_;
  // short_scope() builds its events in place here, with one bounds check per
  // event, and they reach buffer_ in blocks.
  static constexpr std::size_t stage_size = 16384, max_short_event = short_prefix_max + 160;
  char stage_[stage_size];
  char* stage_end_ = stage_;
  bool first_event_ = true;
  // A timestamp's text: the digits above its last eight, which successive
  // events nearly always share, are the last timestamp's.
  struct ts_text {
    std::uint64_t high_base = 0;  // those digits times 10^8 (0: none yet; every ts here is above 10^8)
    char high_text[16] = {};
    std::size_t high_size = 0;
    char* put(char* p, std::int64_t ns) noexcept {
      const auto u = static_cast<std::uint64_t>(ns);
      if (PROFTRACE_UNLIKELY(u - high_base >= 100'000'000 || high_base == 0)) {
        if (ns < 100'000'000 || ns >= 10'000'000'000'000'000) return put_us3(p, ns);
        *this = for_high(ns);
      }
      std::memcpy(p, high_text, 8);  // fixed size: one move; the high digits are at most eight
      p += high_size;
      const std::uint64_t low = eight_digits(static_cast<std::uint32_t>(u - high_base));
      std::memcpy(p, &low, 8);  // "iiiiifff": the point goes after the fifth
      const std::uint64_t frac = (low >> 40) << 8 | '.';
      std::memcpy(p + 5, &frac, 8);
      return p + 9;
    }
    // Returned by value, so that a caller's copy in a local never has its
    // address taken: the events are chars, which may alias anything else.
    static ts_text for_high(std::int64_t ns) noexcept;
  };
  ts_text ts_;
  // The short event at `p` (a comma first unless `first`): its prefix, ts,
  // dur and External id's value; returns where the rest goes.
  PROFTRACE_ALWAYS_INLINE static char* put_short(char* p, bool first, const short_prefix& prefix, ts_text& ts,
                                                 std::int64_t base_ns, std::int64_t begin_ns, std::int64_t end_ns,
                                                 std::uint64_t external_id) noexcept {
    std::memcpy(p, ",\n", 2);
    p += first ? 0 : 2;
    std::memcpy(p, prefix.bytes, sizeof prefix.bytes);  // fixed size: a few moves; prefix.size bytes count
    p += prefix.size;
    p = ts.put(p, begin_ns - base_ns);
    static constexpr std::string_view dur_key = ", \"dur\": ", id_key = ", \"args\": {\"External id\": ";
    std::memcpy(p, dur_key.data(), dur_key.size());
    p += dur_key.size();
    const std::int64_t dur = end_ns > begin_ns ? end_ns - begin_ns : 0;
    p = dur < 100'000'000 ? put_us3_below_1e8(p, static_cast<std::uint32_t>(dur)) : put_us3(p, dur);
    std::memcpy(p, id_key.data(), id_key.size());
    p += id_key.size();
    return external_id < 100'000'000 ? put_below_1e8(p, static_cast<std::uint32_t>(external_id))
                                     : std::to_chars(p, p + 24, external_id).ptr;
  }
  // The same for a run of leaves of one site and thread, with the
  // writer's state in locals (see ts_text::for_high).
  void short_leaves(const short_prefix& prefix, std::span<const closed_leaf> run);
  std::unordered_map<const site*, std::string> prefixes_;  // node-based: last_prefix_ stays valid
  const site* last_site_ = nullptr;
  const std::string* last_prefix_ = nullptr;
  struct site_thread_hash {
    std::size_t operator()(const std::pair<const site*, std::int64_t>& k) const noexcept {
      return std::hash<const void*>{}(k.first) * 31 + static_cast<std::size_t>(k.second);
    }
  };
  std::unordered_map<std::pair<const site*, std::int64_t>, short_prefix, site_thread_hash> thread_prefixes_;
  // thread_prefixes_' recent answers: nested scopes alternate their sites.
  recent_cache<std::pair<const site*, std::int64_t>, short_prefix> recent_prefixes_;
};

}  // namespace proftrace::detail
