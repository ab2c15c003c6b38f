#include "kineto_json_reader.hpp"

#include <utility>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

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

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
