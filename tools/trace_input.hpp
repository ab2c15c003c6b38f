// tools/trace_input.hpp — the uncompressed bytes of a trace file, by suffix:
// ".gz" gzip, ".zst" zstd, anything else as is.
//
// zlib and zstd are driven through their streaming APIs rather than
// Boost.Iostreams' filters because a trace cut off while being written (a
// crash, SIGKILL) must be told apart from corrupt data, and everything that
// decoded before the cut must still be handed over: the Boost filters throw
// on a missing gzip trailer and do not notice a zstd frame that stops early.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace proftrace::tools {

// Why `path` is not read when it names a format proftrace only writes (an
// OTF2 archive, a Caliper profile): it is not a trace. Empty otherwise.
std::string export_only_reason(const std::filesystem::path& path);
// Throws trace_error ("PATH: " and that reason) for such a path.
void refuse_export_only(const std::filesystem::path& path);

class trace_input {
 public:
  enum class state : std::uint8_t {
    reading,   // more may come
    complete,  // the file ended where its compressed stream ends
    cut_off,   // the file ended inside a compressed stream (or an empty compressed file)
    corrupt,   // the compressed data cannot be decoded; error() says why
  };

  // Throws trace_error ("PATH: cannot open: ...") when the file cannot be
  // read, and as refuse_export_only does.
  explicit trace_input(const std::filesystem::path& path);
  ~trace_input();
  trace_input(const trace_input&) = delete;
  trace_input& operator=(const trace_input&) = delete;

  // Fills up to `capacity` bytes; returns 0 only once status() is no longer
  // `reading`. Never throws.
  std::size_t read(char* out, std::size_t capacity);

  state status() const noexcept { return state_; }
  const char* codec() const noexcept;  // "gzip", "zstd", or nullptr for a plain file
  const std::string& error() const noexcept { return error_; }
  std::uint64_t file_bytes_read() const noexcept { return file_bytes_read_; }
  // A buffer for read(): `max`, or less for a small file (a small trace then
  // costs no megabyte of fresh memory per read).
  std::size_t buffer_size(std::size_t max) const noexcept;

 private:
  enum class codec_kind : std::uint8_t { plain, gzip, zstd };
  struct zlib_state;
  struct zstd_state;

  bool fill_input();  // false at the end of the file (or a read error, then state_ is corrupt)
  std::size_t read_plain(char* out, std::size_t capacity);
  std::size_t read_gzip(char* out, std::size_t capacity);
  std::size_t read_zstd(char* out, std::size_t capacity);

  std::FILE* file_ = nullptr;
  codec_kind codec_ = codec_kind::plain;
  state state_ = state::reading;
  std::string error_;
  std::vector<unsigned char> in_buf_;
  std::size_t in_pos_ = 0, in_end_ = 0;
  bool file_at_end_ = false;
  std::uint64_t file_bytes_read_ = 0;
  std::uint64_t file_size_ = 0;
  std::unique_ptr<zlib_state> zlib_;
  std::unique_ptr<zstd_state> zstd_;
};

}  // namespace proftrace::tools
