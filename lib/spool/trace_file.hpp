// Internal: the trace file a window streams into, and its export.
//
// The file is plain JSON and valid at every commit: events are written where
// the previous tail began, then a fresh tail closes the array and the object,
// followed by a white-space trailer naming the offset where that tail begins
// (so a repair can tell a commit cut short from a file cut short).
// A crash or SIGKILL therefore loses at most what was not yet committed (one
// flush period), and the file left behind still parses.
//
// The descriptor stays open after the last commit and exports read through
// it, so a spool file removed while the trace records still exports whole.
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class export_temporary;

class trace_file {
 public:
  // Creates `path`, which must not exist yet, and writes `head` followed by
  // `tail`. Throws std::runtime_error naming the path and the reason.
  // `closes_with_tail` false: a format whose events are only ever appended
  // (Perfetto's packets): no tail or trailer is written; commits append.
  trace_file(std::filesystem::path path, std::string_view head, std::string_view tail, bool closes_with_tail = true);
  ~trace_file();
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;

  // Appends `events` (already comma-separated) and rewrites the tail. False
  // once a write failed; error() says why, and later commits write nothing.
  // A write that fails partway keeps, for the export, every whole event (or
  // packet) it put in the file: at least what `proftrace validate --repair`
  // recovers from the file. What was not written is counted in
  // events_not_written().
  bool commit(std::string_view events, std::string_view tail) noexcept;

  // Writes the committed events followed by `tail` to `dest`, compressed
  // according to dest's suffix: ".gz" gzip, ".zst" zstd, anything else
  // plain. Whole or not at all: written beside `dest` and renamed over it.
  // Throws std::runtime_error naming dest and the reason (a full disk fails
  // at once, never retried). `into`: written there instead (a temporary of
  // the caller's, named `dest`), as it is.
  void export_to(std::string_view tail, const std::filesystem::path& dest, const export_temporary* into = nullptr) const;

  // The cheap export: when `dest` is plain (no compression suffix) and on
  // the same file system, the finished spool itself, its closing part
  // rewritten to `tail`, is renamed to `dest` (a trace of gigabytes exports
  // at once). Later exports still read through the open descriptor, and
  // throw std::runtime_error if the file was changed there since (its size,
  // time or first block differ). False, with nothing renamed, where that
  // cannot be done (the caller copies).
  bool move_to(std::string_view tail, const std::filesystem::path& dest) noexcept;

  // The file is complete: the space reserved past its end goes back.
  void release_reserve() noexcept;

  // True once the file has no name left (removed while open).
  bool removed() const noexcept;
  void close() noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::uint64_t events_end() const noexcept { return events_end_; }
  const std::string& error() const noexcept { return error_; }
  // After a failed write: the events (JSON: elements of traceEvents;
  // Perfetto: TracePackets) given to commit() that the file does not hold.
  std::uint64_t events_not_written() const noexcept { return events_not_written_; }

 private:
  bool write_at(std::uint64_t offset, std::string_view data, std::size_t* written = nullptr) noexcept;
  void keep_whole_events(std::string_view events, std::size_t written) noexcept;
  void reserve(std::uint64_t end) noexcept;
  void give_back_reserve() noexcept;

  // What the file was when move_to handed it over, to tell whether it changed since.
  struct fingerprint {
    std::int64_t size = -1, modified_ns = 0;
    std::string first_block;
    bool operator==(const fingerprint&) const = default;
  };
  fingerprint fingerprint_now() const noexcept;

  std::filesystem::path path_;
  std::optional<fingerprint> handed_over_;
  int fd_ = -1;
  std::uint64_t events_end_ = 0;
  std::string tail_;  // as last written
  std::uint64_t closing_size_ = 0;  // the tail and its trailer, as last written (see trace_file.cpp)
  std::string error_;
  std::uint64_t events_not_written_ = 0;
  bool closes_with_tail_ = true;
  bool reserving_ = false;  // on a file system that allocates blocks as the writes come (see reserve)
  std::uint64_t reserved_end_ = 0;  // 0: nothing reserved
  static constexpr std::uint64_t reserve_step = std::uint64_t{16} << 20;
};


// Writes `text` to `dest`, compressed by suffix, whole or not at all, as
// export_to does. Throws std::runtime_error naming dest and the reason.
void write_compressed(const std::filesystem::path& dest, std::string_view text);

}  // namespace proftrace::detail
