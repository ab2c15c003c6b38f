#include "trace_file.hpp"

#include "compression_filters.hpp"
#include "export_temporary.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

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

// Where an export goes: a temporary file beside `dest` (export_temporary.hpp:
// a killed export's is removed by the next one), renamed over it only
// once every byte and the close succeeded, so a full disk or a size limit
// never leaves a truncated file under the final name (nor truncates what was
// there, the spool itself included). A `dest` that exists and is not a
// regular file (/dev/full, a FIFO, /dev/stdout) is written in place, and so
// is a caller's own temporary (`into`).
class output_file {
 public:
  output_file(const std::filesystem::path& dest, const char* what, const export_temporary* into = nullptr)
      : dest_(dest), what_(what) {
    if (into) {
      fd_ = into->fd();
      borrowed_ = true;
      return;
    }
    std::error_code ec;
    const auto st = std::filesystem::status(dest_, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
      fd_ = ::open(dest_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail(errno);
      return;
    }
    const std::filesystem::path target = std::filesystem::weakly_canonical(dest_, ec);
    final_ = ec ? dest_ : target;
    try {
      temp_.emplace(final_);
    } catch (const std::system_error& e) {
      fail(e.code().value());
    }
    fd_ = temp_->fd();
  }
  ~output_file() {
    if (fd_ >= 0 && !temp_ && !borrowed_) ::close(fd_);
  }
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;

  int fd() const noexcept { return fd_; }

  // Every byte, or std::runtime_error naming dest and the reason (ENOSPC,
  // EFBIG, EIO...). Never retried on those: a full disk fails at once.
  void write(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n < 0 ? errno : EIO);
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  [[noreturn]] void fail(int err) const { throw std::runtime_error(describe(dest_, what_, err)); }

  // Closes, checking the close, and puts the file under its final name.
  void commit() {
    const int fd = std::exchange(fd_, -1);
    if (borrowed_) return;
    if (temp_) {
      if (!temp_->close_and_rename(final_)) fail(errno);
      return;
    }
    if (::close(fd) != 0) fail(errno);
  }

 private:
  std::filesystem::path dest_;
  const char* what_;
  std::filesystem::path final_;
  std::optional<export_temporary> temp_;
  bool borrowed_ = false;  // the caller's temporary: written, never closed here
  int fd_ = -1;
};

// A Boost.Iostreams sink onto an output_file. The first failure is kept and
// every later write is swallowed: Boost's compressors retry a sink that
// returns short counts (a gzip close onto a full disk spun for minutes), and
// the caller reports the failure once the stream is closed.
class checked_sink {
 public:
  using char_type = char;
  using category = boost::iostreams::sink_tag;
  checked_sink(output_file& out, std::string& error) : out_(&out), error_(&error) {}
  std::streamsize write(const char* s, std::streamsize n) {
    if (error_->empty()) {
      try {
        out_->write({s, static_cast<std::size_t>(n)});
      } catch (const std::exception& e) {
        *error_ = e.what();
      }
    }
    return n;
  }

 private:
  output_file* out_;
  std::string* error_;
};

// `length` bytes of the file open as `in` into `out`, copied by the kernel
// (copy_file_range). False, with nothing written, where the file systems do
// not allow it (the caller then copies through a buffer); a write error
// (ENOSPC, EFBIG, EIO) throws.
bool kernel_copy(int in, std::uint64_t length, output_file& out) {
  loff_t in_offset = 0;
  std::uint64_t left = length;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(in, &in_offset, out.fd(), nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && left == length &&
        (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF))
      return false;
    if (n < 0) out.fail(errno);
    if (n == 0) throw std::runtime_error("proftrace: the trace being exported is shorter than recorded");
    left -= static_cast<std::uint64_t>(n);
  }
  return true;
}

// Writes `text` to `out` through the compressor `dest`'s suffix names.
void write_through_compressor(output_file& out, const std::filesystem::path& dest,
                              const std::function<void(boost::iostreams::filtering_ostream&)>& produce) {
  std::string error;
  {
    boost::iostreams::filtering_ostream stream;
    push_compressor(stream, compression_of(dest));
    stream.push(checked_sink(out, error), compressor_buffer);
    produce(stream);
    stream.reset();  // flushes the compressor's final block into the sink
  }
  if (!error.empty()) throw std::runtime_error(error);
}

// Whether the file system is ext4, which allocates blocks lazily, one page
// at a time, as buffered writes fill them (delayed allocation): there a
// reserve past the end saves that work, and setting the size again frees
// what is left of it (checked; XFS delays allocation too, but how it frees
// a reserve past the end was not checked, so it gets none).
bool allocates_lazily(int fd) {
  struct statfs fs {};
  constexpr long ext4_magic = 0xEF53;  // statfs(2)
  return ::fstatfs(fd, &fs) == 0 && static_cast<long>(fs.f_type) == ext4_magic;
}

// What follows every closing part in the spool (never in an export): JSON
// white space after the top-level object, so every reader ignores it, that
// names the byte offset where that closing part begins, which is where the
// events of the last complete commit end. A commit writes its events over
// the old closing part: a kill partway through leaves the old part's
// leftovers after the new bytes, and with them this trailer, which no longer
// matches the text. `proftrace validate --repair` reads it from the end of
// the file and then keeps only the events before that offset, never an
// "event" pieced together from new bytes and old leftovers. A file cut short
// (no leftovers) ends without it, and repair keeps every complete event.
//
// Layout (67 bytes): '\t', then the offset's 64 bits, least significant
// first, ' ' for 0 and '\t' for 1, then "\t\n". The writer never puts a tab
// anywhere else in the spool (names are escaped). tools/trace_repair.cpp
// reads the same layout.
std::string commit_trailer(std::uint64_t events_end) {
  std::string t(1, '\t');
  for (int bit = 0; bit < 64; ++bit) t += (events_end >> bit & 1) != 0 ? '\t' : ' ';
  t += "\t\n";
  return t;
}

// The events of a commit that a failed write put in the file whole: the
// length of the longest prefix of `events` that ends at an event's end
// within its first `written` bytes, and how many events follow it.
// JSON: the writers separate events with ",\n" and escape every newline
// inside a string, so an event ends where a separator (or the text) begins.
// Perfetto: each event is a length-delimited TracePacket.
struct whole_events {
  std::size_t bytes = 0;
  std::uint64_t events_after = 0;
};

std::uint64_t json_events_in(std::string_view text) {
  if (text.empty()) return 0;
  std::uint64_t n = text.starts_with(",\n") ? 0 : 1;  // the trace's first event has no separator
  for (std::size_t at = text.find(",\n"); at != std::string_view::npos; at = text.find(",\n", at + 2)) ++n;
  return n;
}

whole_events whole_json_events(std::string_view events, std::size_t written) {
  std::size_t end = events.size();
  if (written < events.size()) {
    const std::size_t separator = events.rfind(",\n", written);
    end = separator == std::string_view::npos ? 0 : separator;
  }
  return {end, json_events_in(events.substr(end))};
}

bool read_varint(std::string_view bytes, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[at++]);
    value |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

whole_events whole_packets(std::string_view packets, std::size_t written) {
  whole_events w;
  std::size_t at = 0;
  while (at < packets.size()) {
    std::size_t next = at;
    std::uint64_t tag = 0, length = 0;
    if (!read_varint(packets, next, tag) || (tag & 7) != 2 || !read_varint(packets, next, length) ||
        length > packets.size() - next)
      break;
    next += static_cast<std::size_t>(length);
    if (next <= written) w.bytes = next;
    else ++w.events_after;
    at = next;
  }
  return w;
}

}  // namespace

trace_file::trace_file(std::filesystem::path path, std::string_view head, std::string_view tail, bool closes_with_tail)
    : path_(std::move(path)), closes_with_tail_(closes_with_tail) {
  const file_size_signal_shield shield;
  // O_EXCL: never truncate another run's spool (a crashed run's is all that is left of it).
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(describe(path_, "write trace", errno));
  std::string closing;
  if (closes_with_tail_) {
    closing = tail;
    closing += commit_trailer(head.size());
  }
  if (!write_at(0, head) || !write_at(head.size(), closing)) {
    const std::string message = error_;
    close();
    throw std::runtime_error(message);
  }
  events_end_ = head.size();
  reserving_ = allocates_lazily(fd_);
  if (closes_with_tail_) tail_ = tail;
  closing_size_ = closing.size();
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

bool trace_file::write_at(std::uint64_t offset, std::string_view data, std::size_t* written) noexcept {
  const std::size_t size = data.size();
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = describe(path_, "write trace", errno);
      if (written) *written = size - data.size();
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  if (written) *written = size;
  return true;
}

// A write of `events` failed after `written` bytes: the whole events among
// them are the trace's (exports copy them), the rest is counted.
void trace_file::keep_whole_events(std::string_view events, std::size_t written) noexcept {
  const whole_events kept = closes_with_tail_ ? whole_json_events(events, written) : whole_packets(events, written);
  events_end_ += kept.bytes;
  events_not_written_ += kept.events_after;
}

bool trace_file::commit(std::string_view events, std::string_view tail) noexcept {
  if (fd_ < 0) return false;
  if (!error_.empty()) {
    events_not_written_ += closes_with_tail_ ? json_events_in(events) : whole_packets(events, 0).events_after;
    return false;
  }
  const file_size_signal_shield shield;
  // Nothing new: leave the file alone, so an idle program's spool is never
  // caught mid-write by a kill.
  if (events.empty() && (tail == tail_ || !closes_with_tail_)) return true;
  reserve(events_end_ + events.size() + tail.size() + closing_size_);
  std::size_t written = 0;
  if (!write_at(events_end_, events, &written)) {
    keep_whole_events(events, written);
    return false;
  }
  if (!closes_with_tail_) {
    events_end_ += events.size();
    return true;
  }
  const std::uint64_t old_end = events_end_ + closing_size_;
  events_end_ += events.size();
  std::string closing(tail);
  closing += commit_trailer(events_end_);
  if (!write_at(events_end_, closing)) return false;
  if (events_end_ + closing.size() < old_end && ::ftruncate(fd_, static_cast<off_t>(events_end_ + closing.size())) != 0) {
    error_ = describe(path_, "truncate trace", errno);
    return false;
  }
  tail_ = tail;
  closing_size_ = closing.size();
  return true;
}

// Blocks past the end, reserved with fallocate(KEEP_SIZE): the size and the
// content stay as they were (a kill leaves nothing more), and the file
// system maps the reserve once instead of allocating block by block as the
// writes come (bench/notes/history.md, "The whole cost of a recorded scope": a tenth
// of a scope's whole cost to .json).
// A reserve the file system refuses (a full disk) is given back, and the file
// goes on without one.
void trace_file::reserve(std::uint64_t end) noexcept {
  if (!reserving_ || end <= reserved_end_) return;
  const std::uint64_t from = std::max(reserved_end_, events_end_);
  const std::uint64_t to = end + reserve_step;
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(to - from)) == 0) {
    reserved_end_ = to;
    return;
  }
  reserving_ = false;
  give_back_reserve();
}

void trace_file::release_reserve() noexcept {
  if (reserved_end_ != 0) give_back_reserve();
  reserving_ = false;
}

// ext4 frees the blocks past the end when the size is set again (also what
// a refused fallocate may have left there). A failure only keeps the space
// longer.
void trace_file::give_back_reserve() noexcept {
  reserved_end_ = 0;
  if (fd_ < 0) return;
  // After a failed write the file ends where that write stopped, and stays
  // so for a repair.
  struct stat st {};
  const off_t end = error_.empty()              ? static_cast<off_t>(events_end_ + closing_size_)
                    : ::fstat(fd_, &st) == 0 ? st.st_size
                                              : -1;
  if (end < 0) return;
  [[maybe_unused]] const int ignored = ::ftruncate(fd_, end);
}

trace_file::fingerprint trace_file::fingerprint_now() const noexcept {
  fingerprint f;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return f;
  f.size = st.st_size;
  f.modified_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.first_block.resize(static_cast<std::size_t>(std::min<off_t>(st.st_size, 4096)));
  const ssize_t got = ::pread(fd_, f.first_block.data(), f.first_block.size(), 0);
  f.first_block.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return f;
}

void trace_file::export_to(std::string_view tail, const std::filesystem::path& dest, const export_temporary* into) const {
  if (fd_ < 0) throw std::runtime_error(describe(path_, "read trace", EBADF));
  if (handed_over_ && fingerprint_now() != *handed_over_)
    throw std::runtime_error("proftrace: cannot export the trace again: '" + path_.string() +
                             "', which an earlier export took as the trace itself, was changed since");
  const file_size_signal_shield shield;
  output_file out(dest, "write trace", into);
  const auto copy_events = [&](const std::function<void(const char*, std::size_t)>& sink) {
    std::vector<char> buf(1 << 20);
    std::uint64_t offset = 0;
    while (offset < events_end_) {
      const ssize_t got = ::pread(fd_, buf.data(), std::min<std::uint64_t>(events_end_ - offset, buf.size()),
                                  static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw std::runtime_error("proftrace: trace '" + path_.string() + "' is shorter than recorded");
      sink(buf.data(), static_cast<std::size_t>(got));
      offset += static_cast<std::uint64_t>(got);
    }
  };
  if (compression_of(dest) == compression::none) {
    if (!kernel_copy(fd_, events_end_, out)) copy_events([&](const char* p, std::size_t n) { out.write({p, n}); });
    out.write(tail);
  } else {
    write_through_compressor(out, dest, [&](boost::iostreams::filtering_ostream& stream) {
      copy_events([&](const char* p, std::size_t n) { stream.write(p, static_cast<std::streamsize>(n)); });
      stream.write(tail.data(), static_cast<std::streamsize>(tail.size()));
    });
  }
  out.commit();
}

bool trace_file::move_to(std::string_view tail, const std::filesystem::path& dest) noexcept {
  if (fd_ < 0 || !error_.empty() || compression_of(dest) != compression::none) return false;
  std::error_code ec;
  const auto st = std::filesystem::status(dest, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) return false;  // a device, a FIFO
  struct stat spool {}, dir {};
  const std::filesystem::path dest_dir = dest.parent_path().empty() ? std::filesystem::path(".") : dest.parent_path();
  if (::fstat(fd_, &spool) != 0 || ::stat(dest_dir.c_str(), &dir) != 0 || spool.st_dev != dir.st_dev) return false;
  const file_size_signal_shield shield;
  if (::ftruncate(fd_, static_cast<off_t>(events_end_)) != 0 || !write_at(events_end_, tail)) {
    error_.clear();  // the spool is finished: a failed rewrite only means the copy is taken instead
    return false;
  }
  closing_size_ = tail.size();
  tail_ = tail;
  if (::rename(path_.c_str(), dest.c_str()) != 0) return false;
  path_ = dest;
  handed_over_ = fingerprint_now();
  return true;
}

void write_compressed(const std::filesystem::path& dest, std::string_view text) {
  const file_size_signal_shield shield;
  output_file out(dest, "write");
  if (compression_of(dest) == compression::none) {
    out.write(text);
  } else {
    write_through_compressor(out, dest, [&](boost::iostreams::filtering_ostream& stream) {
      stream.write(text.data(), static_cast<std::streamsize>(text.size()));
    });
  }
  out.commit();
}

}  // namespace proftrace::detail
