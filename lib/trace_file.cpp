#include "trace_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {
std::string describe(const std::filesystem::path& p, const char* what, int err) {
  return std::string("proftrace: cannot ") + what + " '" + p.string() + "': " + std::strerror(err);
}
// A write past RLIMIT_FSIZE (`ulimit -f`) raises SIGXFSZ, whose default
// action ends the program. While proftrace writes, the signal is held back
// and then discarded, so the write fails with EFBIG instead: one warning, and
// the program goes on. (The flusher thread keeps every signal blocked.)
class file_size_signal_shield {
 public:
  file_size_signal_shield() noexcept {
    sigset_t xfsz;
    ::sigemptyset(&xfsz);
    ::sigaddset(&xfsz, SIGXFSZ);
    ::pthread_sigmask(SIG_BLOCK, &xfsz, &previous_);
  }
  ~file_size_signal_shield() {
    if (::sigismember(&previous_, SIGXFSZ)) return;  // blocked by the program already: not ours to take
    sigset_t pending;
    if (::sigpending(&pending) == 0 && ::sigismember(&pending, SIGXFSZ)) {
      sigset_t xfsz;
      ::sigemptyset(&xfsz);
      ::sigaddset(&xfsz, SIGXFSZ);
      const timespec now{0, 0};
      ::sigtimedwait(&xfsz, nullptr, &now);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  file_size_signal_shield(const file_size_signal_shield&) = delete;
  file_size_signal_shield& operator=(const file_size_signal_shield&) = delete;

 private:
  sigset_t previous_;
};

enum class compression { none, gzip, zstd };

compression compression_of(const std::filesystem::path& dest) {
  const std::string name = dest.filename().string();
  if (name.ends_with(".gz")) return compression::gzip;
  if (name.ends_with(".zst")) return compression::zstd;
  return compression::none;
}

// Iostreams' default buffers are a few hundred bytes: each would be one call
// into the compressor.
constexpr std::streamsize compressor_buffer = 1 << 16;

// ".gz": gzip, ".zst": zstd, anything else: plain. Both at their fastest
// level: a trace's repetitive JSON compresses about as well (bench/README:
// "Flusher throughput"), and exporting is on the program's path.
void push_compressor(boost::iostreams::filtering_ostream& out, const std::filesystem::path& dest) {
  switch (compression_of(dest)) {
    case compression::gzip:
      out.push(boost::iostreams::gzip_compressor(boost::iostreams::gzip_params(boost::iostreams::zlib::best_speed),
                                                 compressor_buffer),
               compressor_buffer);
      break;
    case compression::zstd:
      out.push(boost::iostreams::zstd_compressor(boost::iostreams::zstd_params(boost::iostreams::zstd::best_speed),
                                                 compressor_buffer),
               compressor_buffer);
      break;
    case compression::none: break;
  }
}

// The first `length` bytes of the file open as `in` into `dest`, copied by
// the kernel (copy_file_range); false, with nothing promised about `dest`,
// where the file systems do not allow it (the caller then copies through a
// buffer).
bool kernel_copy(int in, std::uint64_t length, const std::filesystem::path& dest) {
  const int out = ::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return false;
  loff_t in_offset = 0;
  std::uint64_t left = length;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(in, &in_offset, out, nullptr, left, 0);
    if (n <= 0) break;
    left -= static_cast<std::uint64_t>(n);
  }
  return ::close(out) == 0 && left == 0;
}

}  // namespace

trace_file::trace_file(std::filesystem::path path, std::string_view head, std::string_view tail)
    : path_(std::move(path)) {
  const file_size_signal_shield shield;
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(describe(path_, "write trace", errno));
  if (!write_at(0, head) || !write_at(head.size(), tail)) {
    const std::string message = error_;
    close();
    throw std::runtime_error(message);
  }
  events_end_ = head.size();
  tail_ = tail;
}

trace_file::~trace_file() { close(); }

void trace_file::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool trace_file::removed() const noexcept {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

bool trace_file::write_at(std::uint64_t offset, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = describe(path_, "write trace", errno);
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool trace_file::commit(std::string_view events, std::string_view tail) noexcept {
  if (fd_ < 0 || !error_.empty()) return false;
  const file_size_signal_shield shield;
  // Nothing new: leave the file alone, so an idle program's spool is never
  // caught mid-write by a kill.
  if (events.empty() && tail == tail_) return true;
  const std::uint64_t old_end = events_end_ + tail_.size();
  if (!write_at(events_end_, events)) return false;
  events_end_ += events.size();
  if (!write_at(events_end_, tail)) return false;
  if (events_end_ + tail.size() < old_end && ::ftruncate(fd_, static_cast<off_t>(events_end_ + tail.size())) != 0) {
    error_ = describe(path_, "truncate trace", errno);
    return false;
  }
  tail_ = tail;
  return true;
}

void trace_file::export_to(std::string_view tail, const std::filesystem::path& dest) const {
  if (fd_ < 0) throw std::runtime_error(describe(path_, "read trace", EBADF));
  const file_size_signal_shield shield;
  if (compression_of(dest) == compression::none && kernel_copy(fd_, events_end_, dest)) {
    std::ofstream file(dest, std::ios::binary | std::ios::app);
    file.write(tail.data(), static_cast<std::streamsize>(tail.size()));
    file.flush();
    if (!file) throw std::runtime_error(describe(dest, "write trace", errno ? errno : EIO));
    return;
  }
  std::ofstream file(dest, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(describe(dest, "write trace", errno));

  boost::iostreams::filtering_ostream out;
  push_compressor(out, dest);
  out.push(file);

  std::vector<char> buf(1 << 20);
  std::uint64_t offset = 0;
  while (offset < events_end_) {
    const ssize_t got = ::pread(fd_, buf.data(), std::min<std::uint64_t>(events_end_ - offset, buf.size()),
                                static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.write(buf.data(), got);
    offset += static_cast<std::uint64_t>(got);
  }
  if (offset != events_end_) throw std::runtime_error("proftrace: trace '" + path_.string() + "' is shorter than recorded");
  out.write(tail.data(), static_cast<std::streamsize>(tail.size()));
  out.reset();  // flushes the compressor's final block into `file`
  file.flush();
  if (!file) throw std::runtime_error(describe(dest, "write trace", errno ? errno : EIO));
}

void write_compressed(const std::filesystem::path& dest, std::string_view text) {
  const file_size_signal_shield shield;
  std::ofstream file(dest, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(describe(dest, "write", errno));
  boost::iostreams::filtering_ostream out;
  push_compressor(out, dest);
  out.push(file);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.reset();
  file.flush();
  if (!file) throw std::runtime_error(describe(dest, "write", errno ? errno : EIO));
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
