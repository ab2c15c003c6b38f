// Internal: Perfetto's `Trace` protobuf, written packet by packet.
//
// A .pftrace file is nothing but `Trace.packet` fields (field 1), so the
// builder appends whole packets to a byte buffer that the caller writes out
// when it likes: a file cut between packets still loads. Names, categories
// and annotation names are interned on one packet sequence (ids from 1,
// SEQ_INCREMENTAL_STATE_CLEARED on the first packet). Timestamps are Unix
// nanoseconds (REALTIME, clock id 1), placed by a clock snapshot in the
// first packet. ../shared/reference/perfetto-trace-format.md has the fields.
//
//   std::string out;
//   perfetto_builder b(out, /*sequence_id=*/1);
//   const auto t = b.thread_track(pid, tid, "main");
//   const annotation args[] = {{.name = "External id", .value = std::uint64_t{7}}};
//   b.slice_begin(t, ns, "step", "user_annotation", args);
//   b.slice_end(t, ns + 1000);
//   write(fd, out.data(), out.size()); out.clear();  // packets so far
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

// One debug annotation (an arg). `json` values are written as
// DebugAnnotation.legacy_json_value (field 9) so that a reader can give them
// back as JSON ("Input Dims": [[2, 3]]) rather than as a quoted string.
struct json_value {
  std::string_view text;
};
struct annotation {
  std::string_view name;
  std::uint64_t name_iid = 0;  // from intern_annotation_name(); 0: intern `name`
  std::variant<std::int64_t, std::uint64_t, double, bool, std::string_view, json_value> value;
};
using annotations = std::span<const annotation>;

class perfetto_builder {
 public:
  // Appends to `out`; every packet carries `sequence_id`.
  perfetto_builder(std::string& out, std::uint32_t sequence_id);

  // Track descriptors, emitted once per uuid (a second call returns the
  // same uuid and writes nothing). Uuids are derived from the arguments, so
  // two builders agree on them.
  std::uint64_t process_track(std::int64_t pid, std::string_view name);
  std::uint64_t thread_track(std::int64_t pid, std::int64_t tid, std::string_view name);
  // A named track under `parent` (0: top level): a GPU stream, an async range's lane.
  std::uint64_t named_track(std::string_view name, std::uint64_t parent, std::uint64_t key);
  std::uint64_t counter_track(std::string_view name, std::uint64_t parent);

  void slice_begin(std::uint64_t track, std::int64_t unix_ns, std::string_view name, std::string_view category,
                   annotations args = {}, std::span<const std::uint64_t> flow_ids = {});
  void slice_end(std::uint64_t track, std::int64_t unix_ns, annotations args = {},
                 std::span<const std::uint64_t> terminating_flow_ids = {});
  void instant(std::uint64_t track, std::int64_t unix_ns, std::string_view name, std::string_view category,
               annotations args = {});
  void counter(std::uint64_t track, std::int64_t unix_ns, double value);

  // The hot path's form: ids from intern_*() (stable for the builder's
  // life), so a writer caches them per call site instead of hashing text
  // per event. An annotation whose name_iid is nonzero uses it.
  std::uint64_t intern_name(std::string_view name);
  std::uint64_t intern_category(std::string_view category);
  std::uint64_t intern_annotation_name(std::string_view name);
  void slice_begin(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid, std::uint64_t category_iid,
                   annotations args = {});
  void instant(std::uint64_t track, std::int64_t unix_ns, std::uint64_t name_iid, std::uint64_t category_iid,
               annotations args = {});

  std::string& out() noexcept { return out_; }

 private:
  // (implementation state: interning tables, emitted tracks, first-packet flag)
  std::string& out_;
  std::uint32_t sequence_id_;
  bool first_packet_ = true;
  std::unordered_map<std::string, std::uint64_t> names_, categories_, annotation_names_;
  std::unordered_map<std::uint64_t, bool> tracks_;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
