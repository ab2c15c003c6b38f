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

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregation/aggregator.hpp"
#include "pairing/scope_stack.hpp"
#include "json_text.hpp"
#include "writers/trace_head.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct finished_trace;

class kineto_json_writer {
 public:
  explicit kineto_json_writer(const trace_head& head);
  kineto_json_writer(const kineto_json_writer&) = delete;  // stage_end_ points into stage_
  kineto_json_writer& operator=(const kineto_json_writer&) = delete;

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
    return k == last_thread_key_ ? *last_thread_prefix_ : new_prefix(k);
  }
  const short_prefix& new_prefix(const std::pair<const site*, std::int64_t>& k);
  bool short_scope(const thread_state& ts, const open_scope& s, std::int64_t end_ns);
  char* put_short(const short_prefix& prefix, std::int64_t begin_ns, std::int64_t end_ns, std::uint64_t external_id);
  void sync() {
    if (stage_end_ != stage_) buffer_.append(stage_, static_cast<std::size_t>(stage_end_ - stage_));
    stage_end_ = stage_;
  }
  void scope_args(const thread_state& ts, const open_scope& s);
  void shapes_and_flops(const std::string& shapes, std::int64_t flops);
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
  // put_ts(): the digits of the last timestamp above its last eight, which
  // successive events nearly always share.
  char* put_ts(char* p, std::int64_t ns) noexcept {
    const auto u = static_cast<std::uint64_t>(ns);
    if (PROFTRACE_UNLIKELY(u - ts_high_base_ >= 100'000'000 || ts_high_base_ == 0)) return put_ts_new_high(p, ns);
    std::memcpy(p, ts_high_text_, 8);  // fixed size: one move; the high digits are at most eight
    p += ts_high_size_;
    const std::uint64_t low = eight_digits(static_cast<std::uint32_t>(u - ts_high_base_));
    std::memcpy(p, &low, 8);  // "iiiiifff": the point goes after the fifth
    const std::uint64_t frac = (low >> 40) << 8 | '.';
    std::memcpy(p + 5, &frac, 8);
    return p + 9;
  }
  char* put_ts_new_high(char* p, std::int64_t ns) noexcept;
  std::uint64_t ts_high_base_ = 0;  // those digits times 10^8 (0: none yet; every ts here is above 10^8)
  char ts_high_text_[16] = {};
  std::size_t ts_high_size_ = 0;
  std::unordered_map<const site*, std::string> prefixes_;  // node-based: last_prefix_ stays valid
  const site* last_site_ = nullptr;
  const std::string* last_prefix_ = nullptr;
  struct site_thread_hash {
    std::size_t operator()(const std::pair<const site*, std::int64_t>& k) const noexcept {
      return std::hash<const void*>{}(k.first) * 31 + static_cast<std::size_t>(k.second);
    }
  };
  std::unordered_map<std::pair<const site*, std::int64_t>, short_prefix, site_thread_hash> thread_prefixes_;
  std::pair<const site*, std::int64_t> last_thread_key_{nullptr, 0};
  const short_prefix* last_thread_prefix_ = nullptr;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
