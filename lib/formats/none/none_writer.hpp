// Internal: the writer of a profile-only session (trace_format::none): the
// trace window's calls, each doing nothing, so that the session keeps its
// aggregates and writes no trace. The window opens no spool for it.
//
//   trace_window w({.format = trace_format::none, ...}, start, id);  // no file
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/trace_writer.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class none_writer {
 public:
  static constexpr trace_format format = trace_format::none;

  explicit none_writer(const trace_head&) {}
  static std::string head() { return {}; }
  static std::string tail(const finished_trace&, const std::string&) { return {}; }

  void thread(std::int64_t, const std::string&) {}
  void thread_done(std::int64_t) {}
  void scope(thread_state&, const open_scope&, std::int64_t) {}
  void leaves(thread_state&, std::span<const closed_leaf>) {}
  void async(const open_async&, std::uint64_t, std::int64_t, std::int64_t) {}
  void withdrawn(std::int64_t, const open_scope&, std::int64_t) {}
  void memory(const memory_event&) {}
  void instant(std::int64_t, const site&, std::int64_t) {}
  void counter(std::int64_t, const site&, std::int64_t, double) {}
  void gpu(const std::vector<gpu_activity>&, const std::vector<gpu_span>&) {}
  std::string& buffer() { return empty_; }  // stays empty

 private:
  std::string empty_;
};

}  // namespace proftrace::detail
