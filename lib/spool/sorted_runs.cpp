#include "sorted_runs.hpp"

#include <stdexcept>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

constexpr std::size_t run_buffer_bytes = std::size_t{128} << 10;

[[noreturn]] void cannot_write() {
  throw std::runtime_error(
      "cannot write a temporary file to sort the trace's events (is the temporary directory full or unwritable?)");
}

}  // namespace

run_file::run_file() : file_(std::tmpfile()), buf_(run_buffer_bytes) {
  if (!file_) cannot_write();
}

run_file::~run_file() { std::fclose(file_); }

void run_file::flush() {
  if (pos_ != 0 && std::fwrite(buf_.data(), 1, pos_, file_) != pos_) cannot_write();
  pos_ = 0;
}

void run_file::write(const void* data, std::size_t n) {
  if (buf_.size() - pos_ < n) flush();
  if (n > buf_.size()) {
    if (std::fwrite(data, 1, n, file_) != n) cannot_write();
    return;
  }
  std::memcpy(buf_.data() + pos_, data, n);
  pos_ += n;
}

void run_file::finish_writing() {
  flush();
  if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0) cannot_write();
  pos_ = end_ = 0;
}

std::string_view run_file::read(std::size_t n) {
  if (end_ - pos_ < n) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    if (buf_.size() < n) buf_.resize(n);
    end_ += std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_);
  }
  const std::size_t got = std::min(n, end_ - pos_);
  const std::string_view out(buf_.data() + pos_, got);
  pos_ += got;
  return out;
}

}  // namespace proftrace::detail
