#include "kineto_json_reader.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "kineto_json_text.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

kineto_json_reader::kineto_json_reader(kineto_json_handlers handlers, kineto_json_limits limits)
    : handlers_(std::move(handlers)),
      // The scanner counts an element before handing it over: its index is one less.
      scanner_([this](std::string_view object) { handlers_.on_event(scanner_.elements() - 1, object); },
               [this](std::string_view key, std::string_view value) {
                 if (handlers_.on_member) handlers_.on_member(key, value);
               },
               limits.max_piece, limits.check_structure),
      chunk_(limits.chunk) {}

bool kineto_json_reader::read(std::istream& text) {
  while (text) {
    text.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
    feed(std::string_view(chunk_.data(), static_cast<std::size_t>(text.gcount())));
  }
  return !text.bad();
}

bool read_kineto_json_file(const std::filesystem::path& input, kineto_json_handlers handlers) {
  kineto_json_reader reader(std::move(handlers));
  try {
    kineto_json_text text(input);
    if (!reader.read(text.stream())) throw std::runtime_error(input.string() + ": corrupt or cut compressed data");
    return reader.finish();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    throw std::runtime_error(what.starts_with(input.string()) ? what : input.string() + ": " + what);
  }
}

}  // namespace proftrace::detail
