#include "trace_file.hpp"

#include <fcntl.h>
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

// The first `length` bytes of `source` into `dest`, copied by the kernel
// (copy_file_range); false, with nothing promised about `dest`, where the
// file systems do not allow it (the caller then copies through a buffer).
bool kernel_copy(const std::filesystem::path& source, std::uint64_t length, const std::filesystem::path& dest) {
  const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  const int out = ::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    ::close(in);
    return false;
  }
  std::uint64_t left = length;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, left, 0);
    if (n <= 0) break;
    left -= static_cast<std::uint64_t>(n);
  }
  ::close(in);
  return ::close(out) == 0 && left == 0;
}

}  // namespace

trace_file::trace_file(std::filesystem::path path, std::string_view head, std::string_view tail)
    : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(describe(path_, "write trace", errno));
  if (!write_at(0, head) || !write_at(head.size(), tail)) {
    const std::string message = error_;
    close();
    throw std::runtime_error(message);
  }
  events_end_ = head.size();
  tail_size_ = tail.size();
}

trace_file::~trace_file() { close(); }

void trace_file::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
  const std::uint64_t old_end = events_end_ + tail_size_;
  if (!write_at(events_end_, events)) return false;
  events_end_ += events.size();
  if (!write_at(events_end_, tail)) return false;
  if (events_end_ + tail.size() < old_end && ::ftruncate(fd_, static_cast<off_t>(events_end_ + tail.size())) != 0) {
    error_ = describe(path_, "truncate trace", errno);
    return false;
  }
  tail_size_ = tail.size();
  return true;
}

void export_trace(const std::filesystem::path& source, std::uint64_t events_end, std::string_view tail,
                  const std::filesystem::path& dest) {
  if (compression_of(dest) == compression::none && kernel_copy(source, events_end, dest)) {
    std::ofstream file(dest, std::ios::binary | std::ios::app);
    file.write(tail.data(), static_cast<std::streamsize>(tail.size()));
    file.flush();
    if (!file) throw std::runtime_error(describe(dest, "write trace", errno ? errno : EIO));
    return;
  }
  std::ifstream in(source, std::ios::binary);
  if (!in) throw std::runtime_error(describe(source, "read trace", errno));
  std::ofstream file(dest, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(describe(dest, "write trace", errno));

  boost::iostreams::filtering_ostream out;
  push_compressor(out, dest);
  out.push(file);

  std::vector<char> buf(1 << 20);
  std::uint64_t left = events_end;
  while (left > 0 && in) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(left, buf.size())));
    const auto got = in.gcount();
    if (got <= 0) break;
    out.write(buf.data(), got);
    left -= static_cast<std::uint64_t>(got);
  }
  if (left != 0) throw std::runtime_error("proftrace: trace '" + source.string() + "' is shorter than recorded");
  out.write(tail.data(), static_cast<std::streamsize>(tail.size()));
  out.reset();  // flushes the compressor's final block into `file`
  file.flush();
  if (!file) throw std::runtime_error(describe(dest, "write trace", errno ? errno : EIO));
}

void write_compressed(const std::filesystem::path& dest, std::string_view text) {
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
