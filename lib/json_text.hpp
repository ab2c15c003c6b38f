// Internal: the few JSON writing helpers the trace writer needs, tuned for
// the flusher (no allocation beyond the output string).
#pragma once

#include "proftrace/config.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

template <class Int>
inline void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Nanoseconds as microseconds with exactly three decimals ("12.345"),
// formatted on the stack and appended once.
inline void append_us3(std::string& out, std::int64_t ns) {
  char buf[32];
  char* p = buf;
  if (ns < 0) {
    *p++ = '-';
    ns = -ns;
  }
  p = std::to_chars(p, buf + 24, ns / 1000).ptr;
  const auto frac = static_cast<int>(ns % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  out.append(buf, p + 4);
}

// A metadata ("ph": "M") event at ts 0 up to the opening of its args:
// {"name": "<what>", "ph": "M", "ts": 0.000, "pid": P, "tid": T, "args": {
// The caller writes the args and closes with "}}".
template <class Pid, class Tid>
inline void open_metadata_event(std::string& out, std::string_view what, Pid pid, Tid tid) {
  out += "{\"name\": \"";
  out += what;
  out += "\", \"ph\": \"M\", \"ts\": ";
  append_us3(out, 0);
  out += ", \"pid\": ";
  append_int(out, pid);
  out += ", \"tid\": ";
  append_int(out, tid);
  out += ", \"args\": {";
}

// JSON has no NaN or infinity: those become null.
inline void append_double(std::string& out, double v) {
  if (v != v || v - v != 0) {
    out += "null";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
