// The splitter of Kineto JSON on its own: reads a trace through
// kineto_json_reader (the converter's and merge's reader) and prints how
// many events and top-level members it handed over, for timing the
// splitting apart from any parsing of the events (bench/README.md). With
// --parse-elements each event is also parsed by Boost.JSON's parser, reset
// per event, with a handler that does nothing; --parse-whole parses the
// whole text so instead, without the splitter: what a reader parsing
// element by element would pay against one parse of the text.
//
//   proftrace_split_trace /tmp/big10m.pt.trace.json [--check-structure | --parse-elements | --parse-whole]
#include <boost/json/basic_parser_impl.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <proftrace_trace_io/kineto_json_reader.hpp>

namespace {

namespace json = boost::json;
namespace pd = proftrace::detail;

// Counts the objects it sees, and does nothing else.
struct counting_handler {
  static constexpr std::size_t max_object_size = std::size_t(-1), max_array_size = std::size_t(-1),
                               max_key_size = std::size_t(-1), max_string_size = std::size_t(-1);
  std::uint64_t objects = 0;
  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t, json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(std::size_t, json::error_code&) { return ++objects, true; }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_key_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_key(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, json::error_code&) { return true; }
  bool on_uint64(std::uint64_t, json::string_view, json::error_code&) { return true; }
  bool on_double(double, json::string_view, json::error_code&) { return true; }
  bool on_bool(bool, json::error_code&) { return true; }
  bool on_null(json::error_code&) { return true; }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

json::parse_options trace_options() {
  json::parse_options o;
  o.allow_invalid_utf8 = true;  // as the command line's reader
  return o;
}

void parse(json::basic_parser<counting_handler>& parser, bool more, std::string_view text) {
  json::error_code ec;
  parser.write_some(more, text.data(), text.size(), ec);
  if (ec) throw std::runtime_error("invalid JSON: " + ec.message());
}

std::uint64_t parse_whole(const char* path) {
  json::basic_parser<counting_handler> parser(trace_options());
  pd::kineto_json_text text(path);
  std::vector<char> chunk(std::size_t{1} << 20);
  while (text.stream()) {
    text.stream().read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    parse(parser, true, std::string_view(chunk.data(), static_cast<std::size_t>(text.stream().gcount())));
  }
  return parser.handler().objects;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: proftrace_split_trace TRACE.json [--check-structure | --parse-elements | --parse-whole]\n");
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "";
  std::uint64_t events = 0, bytes = 0, members = 0;
  json::basic_parser<counting_handler> parser(trace_options());
  const bool parse_elements = mode == "--parse-elements";
  pd::kineto_json_reader reader({.on_event =
                                     [&](std::uint64_t, std::string_view e) {
                                       ++events, bytes += e.size();
                                       if (parse_elements) parser.reset(), parse(parser, false, e);
                                     },
                                 .on_member = [&](std::string_view, std::string_view) { ++members; }},
                                {.check_structure = mode == "--check-structure"});
  try {
    if (mode == "--parse-whole") {
      std::printf("%llu objects parsed\n", static_cast<unsigned long long>(parse_whole(argv[1])));
      return 0;
    }
    pd::kineto_json_text text(argv[1]);
    if (!reader.read(text.stream())) throw std::runtime_error("the stream failed");
    const bool cut = reader.finish();
    std::printf("%llu events (%llu bytes), %llu members%s; %llu objects parsed\n",
                static_cast<unsigned long long>(events), static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(members), cut ? ", cut" : "",
                static_cast<unsigned long long>(parser.handler().objects));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proftrace_split_trace: %s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
