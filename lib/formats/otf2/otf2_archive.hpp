// Internal: one OTF2 archive being written through libotf2, serially (one
// process writes every location). The archive is written aside, in a
// scratch directory beside its anchor file, and moved into place by
// commit(): the anchor (NAME.otf2), the definitions (NAME.def) and the
// event folder (NAME/). Destroyed without commit(), it leaves nothing.
//
//   otf2_archive a("out/run.otf2");   // throws when out/ cannot be written
//   OTF2_EvtWriter* w = a.events(3);  // location 3's events, in time order
//   otf2_archive::check(OTF2_EvtWriter_Enter(w, nullptr, t, region), "an enter");
//   a.close_events({3});              // then the definitions:
//   OTF2_GlobalDefWriter* d = a.definitions();
//   a.commit();
#pragma once

#include "proftrace/config.hpp"

#include <otf2/otf2.h>

#include <cstdint>
#include <filesystem>
#include <unordered_map>
#include <vector>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

class otf2_archive {
 public:
  explicit otf2_archive(const std::filesystem::path& anchor);
  ~otf2_archive();
  otf2_archive(const otf2_archive&) = delete;
  otf2_archive& operator=(const otf2_archive&) = delete;

  // The event writer of a location (made at its first use).
  OTF2_EvtWriter* events(std::uint64_t location);
  // Closes every event writer (making those of `locations` without one:
  // readers expect an event file per location), then writes each location's
  // (empty) local definitions, as readers expect one per location too.
  void close_events(const std::vector<std::uint64_t>& locations);
  OTF2_GlobalDefWriter* definitions();
  // Closes the archive and moves its files over any archive of that name.
  void commit();

  // Throws std::runtime_error naming the archive and `what` unless `status` is OTF2_SUCCESS.
  void check(OTF2_ErrorCode status, const char* what) const;

 private:
  void close_archive();
  void discard_scratch() noexcept;

  std::filesystem::path anchor_, scratch_;
  std::string name_;  // the anchor's stem: NAME of NAME.otf2
  OTF2_Archive* archive_ = nullptr;
  std::unordered_map<std::uint64_t, OTF2_EvtWriter*> writers_;
};

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
