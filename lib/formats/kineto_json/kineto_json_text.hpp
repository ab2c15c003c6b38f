// Internal: the text of a Kineto JSON trace file as a stream, decompressed
// by the file's suffix (.gz, .zst; anything else as is), for
// kineto_json_reader.
//
//   kineto_json_text text(path);  // throws std::runtime_error "PATH: cannot open"
//   reader.read(text.stream());
//
// A plain file is read from the file itself, not through a filter chain: a
// large read then goes straight into the caller's buffer.
#pragma once

#include "proftrace/config.hpp"

#include <boost/iostreams/filtering_stream.hpp>

#include <filesystem>
#include <fstream>
#include <istream>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class kineto_json_text {
 public:
  explicit kineto_json_text(const std::filesystem::path& path);
  kineto_json_text(const kineto_json_text&) = delete;
  kineto_json_text& operator=(const kineto_json_text&) = delete;

  std::istream& stream() noexcept { return *text_; }

 private:
  std::ifstream file_;
  boost::iostreams::filtering_istream decompressed_;
  std::istream* text_ = &file_;
};

}  // namespace proftrace::detail
