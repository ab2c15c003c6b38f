#include "kineto_json_text.hpp"

#include <stdexcept>

#include "spool/compression_filters.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

kineto_json_text::kineto_json_text(const std::filesystem::path& path) : file_(path, std::ios::binary) {
  if (!file_) throw std::runtime_error(path.string() + ": cannot open");
  if (const compression c = compression_of(path); c != compression::none) {
    push_decompressor(decompressed_, c);
    decompressed_.push(file_);
    text_ = &decompressed_;
  }
}

}  // namespace proftrace::detail
