#include "export_temporary.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

constexpr std::size_t random_part = 6;  // mkostemps' XXXXXX

std::string name_prefix(const std::filesystem::path& dest) { return "." + dest.filename().string() + "."; }

// The writer's pid that `name` gives, or 0 when it is not a temporary of
// the destination `prefix` was made from.
pid_t writer_of(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return 0;
  name.remove_prefix(prefix.size());
  const std::size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || name.size() < dot + 1 + random_part) return 0;
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, pid);
  return ec == std::errc() && end == name.data() + dot && pid > 0 ? pid : 0;
}

bool process_gone(pid_t pid) { return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH; }

// Removes `path`, a regular file, when nobody holds its lock: taken first, so
// that no writer can take it meanwhile.
bool remove_if_unlocked(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  const bool removed = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
                       ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

}  // namespace

std::size_t remove_stale_temporaries(const std::filesystem::path& dest, const std::filesystem::path& dir) {
  const std::string prefix = name_prefix(dest);
  std::size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t pid = writer_of(it->path().filename().string(), prefix);
    if (pid != 0 && process_gone(pid) && remove_if_unlocked(it->path())) ++removed;
  }
  return removed;
}

export_temporary::export_temporary(const std::filesystem::path& dest, const options& how) {
  const std::string name = name_prefix(dest) + std::to_string(::getpid()) + "." + std::string(random_part, 'X') + how.suffix;
  std::vector<std::filesystem::path> dirs{dest.parent_path().empty() ? std::filesystem::path(".") : dest.parent_path()};
  std::error_code ec;
  if (how.or_temp_dir) dirs.push_back(std::filesystem::temp_directory_path(ec));
  int err = 0;
  for (const std::filesystem::path& dir : dirs) {
    if (dir.empty()) continue;
    remove_stale_temporaries(dest, dir);
    std::string pattern = (dir / name).string();
    fd_ = ::mkostemps(pattern.data(), static_cast<int>(how.suffix.size()), O_CLOEXEC);
    if (fd_ >= 0) {
      path_ = pattern;
      ::flock(fd_, LOCK_EX | LOCK_NB);  // new: nobody else holds it
      ::fchmod(fd_, 0644);              // the export's mode once renamed (mkostemps makes 0600)
      return;
    }
    err = errno;
  }
  throw std::system_error(err ? err : EIO, std::generic_category());
}

export_temporary::~export_temporary() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

bool export_temporary::close_and_rename(const std::filesystem::path& final) {
  if (::close(std::exchange(fd_, -1)) != 0) return false;
  if (::rename(path_.c_str(), final.c_str()) != 0) return false;
  path_.clear();
  return true;
}

}  // namespace proftrace::detail
