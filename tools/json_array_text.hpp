// tools/json_array_text.hpp — a JSON array written as text, each element by
// the caller (internal to tools/): merge writes values as JSON, the .pftrace
// reader writes "Input Dims" as Python prints them.
//
//   append_json_array(out, v.get_array(), [](std::string& o, const boost::json::value& x) { o += "1"; });
//   // "[1, 1, 1]"
#pragma once

#include <boost/json/array.hpp>

#include <string>

namespace proftrace::tools {

template <class AppendElement>
void append_json_array(std::string& out, const boost::json::array& a, const AppendElement& append_element) {
  out += '[';
  bool first = true;
  for (const auto& x : a) {
    if (!first) out += ", ";
    first = false;
    append_element(out, x);
  }
  out += ']';
}

}  // namespace proftrace::tools
