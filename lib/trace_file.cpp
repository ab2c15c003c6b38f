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
// ".gz": gzip, ".zst": zstd, anything else: plain.
void push_compressor(boost::iostreams::filtering_ostream& out, const std::filesystem::path& dest) {
  const std::string name = dest.filename().string();
  const auto ends_with = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with(".gz")) out.push(boost::iostreams::gzip_compressor());
  else if (ends_with(".zst")) out.push(boost::iostreams::zstd_compressor());
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
