#include "trace_input.hpp"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "trace_reader.hpp"
#include <proftrace_trace_io/trace_formats.hpp>

namespace proftrace::tools {

struct trace_input::zlib_state {
  z_stream stream{};
  bool between_members = true;  // before the first gzip member, or right after one ended
  std::uint64_t members = 0;
  ~zlib_state() { inflateEnd(&stream); }
};

struct trace_input::zstd_state {
  ZSTD_DStream* stream = ZSTD_createDStream();
  bool mid_frame = false;
  std::uint64_t frames = 0;
  ~zstd_state() { ZSTD_freeDStream(stream); }
};

namespace {
constexpr std::size_t compressed_chunk = std::size_t{1} << 18;
}

std::string export_only_reason(const std::filesystem::path& path) {
  const auto* format = proftrace::detail::parse_trace_name(path.filename().native()).format;
  if (format == nullptr || !format->export_only) return {};
  return "a " + std::string(format->suffix) +
         " file is written only (convert, merge, an export), never read back: give the trace it was converted "
         "from (.json or .pftrace)";
}

void refuse_export_only(const std::filesystem::path& path) {
  if (const std::string why = export_only_reason(path); !why.empty()) throw trace_error(path.string() + ": " + why);
}

trace_input::trace_input(const std::filesystem::path& path) {
  refuse_export_only(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw trace_error(path.string() + ": is a directory");
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw trace_error(path.string() + ": cannot open: " + std::strerror(errno ? errno : ENOENT));
  const auto compressed = proftrace::detail::compression_of(path);
  if (compressed == proftrace::detail::compression::gzip) {
    codec_ = codec_kind::gzip;
    zlib_ = std::make_unique<zlib_state>();
    // 15 + 16: the largest window, gzip wrapper only.
    if (inflateInit2(&zlib_->stream, 15 + 16) != Z_OK) {
      state_ = state::corrupt;
      error_ = "cannot start zlib";
    }
  } else if (compressed == proftrace::detail::compression::zstd) {
    codec_ = codec_kind::zstd;
    zstd_ = std::make_unique<zstd_state>();
    if (!zstd_->stream) {
      state_ = state::corrupt;
      error_ = "cannot start zstd";
    }
  }
  file_size_ = std::filesystem::file_size(path, ec);
  if (ec) file_size_ = 0;
  if (codec_ != codec_kind::plain) in_buf_.resize(std::clamp<std::uint64_t>(file_size_ + 1, 4096, compressed_chunk));
}

std::size_t trace_input::buffer_size(std::size_t max) const noexcept {
  // Compressed text is usually 5-20 times smaller than the text.
  const std::uint64_t expected = codec_ == codec_kind::plain ? file_size_ + 1 : file_size_ * 16;
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(expected, std::min<std::size_t>(4096, max), std::max<std::size_t>(max, 1)));
}

trace_input::~trace_input() {
  if (file_) std::fclose(file_);
}

const char* trace_input::codec() const noexcept {
  switch (codec_) {
    case codec_kind::gzip: return "gzip";
    case codec_kind::zstd: return "zstd";
    case codec_kind::plain: break;
  }
  return nullptr;
}

std::size_t trace_input::read(char* out, std::size_t capacity) {
  if (state_ != state::reading || capacity == 0) return 0;
  switch (codec_) {
    case codec_kind::gzip: return read_gzip(out, capacity);
    case codec_kind::zstd: return read_zstd(out, capacity);
    case codec_kind::plain: break;
  }
  return read_plain(out, capacity);
}

bool trace_input::fill_input() {
  in_pos_ = 0;
  in_end_ = std::fread(in_buf_.data(), 1, in_buf_.size(), file_);
  file_bytes_read_ += in_end_;
  if (in_end_ == 0) {
    file_at_end_ = true;
    if (std::ferror(file_)) {
      state_ = state::corrupt;
      error_ = std::string("read error: ") + std::strerror(errno ? errno : EIO);
    }
    return false;
  }
  return true;
}

std::size_t trace_input::read_plain(char* out, std::size_t capacity) {
  const std::size_t got = std::fread(out, 1, capacity, file_);
  file_bytes_read_ += got;
  if (got == 0) {
    if (std::ferror(file_)) {
      state_ = state::corrupt;
      error_ = std::string("read error: ") + std::strerror(errno ? errno : EIO);
    } else {
      state_ = state::complete;
    }
  }
  return got;
}

std::size_t trace_input::read_gzip(char* out, std::size_t capacity) {
  z_stream& zs = zlib_->stream;
  const auto room = static_cast<uInt>(std::min<std::size_t>(capacity, UINT_MAX));
  zs.next_out = reinterpret_cast<Bytef*>(out);
  zs.avail_out = room;
  while (zs.avail_out > 0 && state_ == state::reading) {
    if (in_pos_ == in_end_ && !file_at_end_) fill_input();
    if (state_ != state::reading) break;
    if (in_pos_ == in_end_) {
      // A file may hold several gzip members back to back; it is whole
      // only when it ends right after one of them.
      state_ = zlib_->between_members && zlib_->members > 0 ? state::complete : state::cut_off;
      break;
    }
    if (zlib_->between_members) {
      inflateReset(&zs);
      zlib_->between_members = false;
    }
    zs.next_in = in_buf_.data() + in_pos_;
    zs.avail_in = static_cast<uInt>(in_end_ - in_pos_);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const bool consumed = in_end_ - in_pos_ != zs.avail_in;
    in_pos_ = in_end_ - zs.avail_in;
    if (rc == Z_STREAM_END) {
      ++zlib_->members;
      zlib_->between_members = true;
    } else if (rc == Z_OK || (rc == Z_BUF_ERROR && (consumed || zs.avail_in == 0))) {
      continue;
    } else {
      state_ = state::corrupt;
      error_ = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
    }
  }
  return room - zs.avail_out;
}

std::size_t trace_input::read_zstd(char* out, std::size_t capacity) {
  ZSTD_outBuffer output{out, capacity, 0};
  while (output.pos < output.size && state_ == state::reading) {
    if (in_pos_ == in_end_ && !file_at_end_) fill_input();
    if (state_ != state::reading) break;
    const bool at_end = in_pos_ == in_end_;
    ZSTD_inBuffer input{in_buf_.data(), in_end_, in_pos_};
    const std::size_t produced_before = output.pos;
    const std::size_t rc = ZSTD_decompressStream(zstd_->stream, &output, &input);
    const bool consumed = input.pos != in_pos_;
    in_pos_ = input.pos;
    if (ZSTD_isError(rc)) {
      state_ = state::corrupt;
      error_ = ZSTD_getErrorName(rc);
      break;
    }
    const bool progressed = consumed || output.pos != produced_before;
    if (progressed) {
      // 0: a frame has just been decoded and flushed in full.
      zstd_->mid_frame = rc != 0;
      if (rc == 0) ++zstd_->frames;
    }
    if (at_end && !progressed) {
      // Nothing more decodes: whole only if the last frame was finished.
      state_ = !zstd_->mid_frame && zstd_->frames > 0 ? state::complete : state::cut_off;
      break;
    }
    if (!at_end && !progressed) {
      state_ = state::corrupt;
      error_ = "zstd made no progress";
    }
  }
  return output.pos;
}

}  // namespace proftrace::tools
