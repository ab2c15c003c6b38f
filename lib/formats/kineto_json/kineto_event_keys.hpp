// Internal: the keys of a Kineto event, and of its args, that proftrace's
// readers act on, told apart once per key (by its length, then its text)
// instead of by a string comparison per value. The command line's reader
// (tools/trace_reader.cpp) and the converter's (kineto_event_reader) read
// an event's fields by them.
//
//   switch (identify_event_key(key)) {
//     case event_key::ts: ...          // a field of the event
//     case event_key::input_dims: ...  // an arg ("Input Dims")
//     default: break;                  // event_key::other: not one of them
//   }
#pragma once

#include "proftrace/config.hpp"

#include <cstdint>
#include <string_view>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

enum class event_key : std::uint8_t {
  other,
  // the event's own fields ("s": an instant's scope)
  ph, cat, name, ts, dur, pid, tid, id, s, args,
  // its args
  external_id, stream, input_dims, flops, bytes, device_type,
};

inline event_key identify_event_key(std::string_view k) noexcept {
  switch (k.size()) {
    case 1:
      if (k == "s") return event_key::s;
      break;
    case 2:
      if (k == "ph") return event_key::ph;
      if (k == "ts") return event_key::ts;
      if (k == "id") return event_key::id;
      break;
    case 3:
      if (k == "cat") return event_key::cat;
      if (k == "dur") return event_key::dur;
      if (k == "pid") return event_key::pid;
      if (k == "tid") return event_key::tid;
      break;
    case 4:
      if (k == "name") return event_key::name;
      if (k == "args") return event_key::args;
      break;
    case 5:
      if (k == "flops") return event_key::flops;
      if (k == "Bytes") return event_key::bytes;
      break;
    case 6:
      if (k == "stream") return event_key::stream;
      break;
    case 10:
      if (k == "Input Dims") return event_key::input_dims;
      break;
    case 11:
      if (k == "External id") return event_key::external_id;
      if (k == "Device Type") return event_key::device_type;
      break;
    default: break;
  }
  return event_key::other;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
