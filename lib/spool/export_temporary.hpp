// Internal: the temporary file an export writes before it is renamed over
// its destination (or, for a conversion, read and removed), named after the
// destination and the writing process, ".NAME.PID.RANDOM[SUFFIX]" beside
// it, and locked (flock) while that process holds it open.
//
// A kill during an export leaves such a file behind (megabytes of trace).
// Making one first removes the stale temporaries of the same destination:
// those whose process is gone (no such pid here) and whose lock nobody
// holds (so a live writer in another pid namespace is left alone). Another
// destination's temporaries, and a live export's, are never touched.
//
//   export_temporary t(dest);        // ".k.json.zst.4242.aB3xYz" beside it
//   write(t.fd(), ...);
//   t.close_and_rename(dest);        // without it the destructor removes the file
#pragma once

#include "proftrace/config.hpp"

#include <filesystem>
#include <string>
#include <system_error>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct export_temporary_options {
  std::string suffix{};      // after the random part (".json")
  bool or_temp_dir = false;  // the system's temporary directory where dest's takes no file
};

class export_temporary {
 public:
  using options = export_temporary_options;
  // In dest's directory (or, see options, the temporary directory).
  // Throws std::system_error with the errno of the failure.
  explicit export_temporary(const std::filesystem::path& dest, const options& how = {});
  ~export_temporary();  // closes, and removes the file unless committed
  export_temporary(const export_temporary&) = delete;
  export_temporary& operator=(const export_temporary&) = delete;

  int fd() const noexcept { return fd_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  // Closes (false: the close failed, errno says why; the file stays, removed
  // by the destructor) and renames the file to `final` (false: errno).
  bool close_and_rename(const std::filesystem::path& final);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// Removes the stale temporaries of `dest` in `dir` (see above); returns how many.
std::size_t remove_stale_temporaries(const std::filesystem::path& dest, const std::filesystem::path& dir);

}  // namespace proftrace::detail
