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
#include <initializer_list>
#include <string_view>
#include <utility>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

enum class event_key : std::uint8_t {
  other,
  // the event's own fields ("s": an instant's scope)
  ph, cat, name, ts, dur, pid, tid, id, s, args,
  // its args
  external_id, stream, input_dims, flops, bytes, device_type,
};

// The one of `candidates` (keys of k's length) that k is.
inline event_key key_among(std::string_view k,
                           std::initializer_list<std::pair<std::string_view, event_key>> candidates) noexcept {
  for (const auto& [text, key] : candidates)
    if (k == text) return key;
  return event_key::other;
}

inline event_key identify_event_key(std::string_view k) noexcept {
  using enum event_key;
  switch (k.size()) {
    case 1: return key_among(k, {{"s", s}});
    case 2: return key_among(k, {{"ph", ph}, {"ts", ts}, {"id", id}});
    case 3: return key_among(k, {{"cat", cat}, {"dur", dur}, {"pid", pid}, {"tid", tid}});
    case 4: return key_among(k, {{"name", name}, {"args", args}});
    case 5: return key_among(k, {{"flops", flops}, {"Bytes", bytes}});
    case 6: return key_among(k, {{"stream", stream}});
    case 10: return key_among(k, {{"Input Dims", input_dims}});
    case 11: return key_among(k, {{"External id", external_id}, {"Device Type", device_type}});
    default: return other;
  }
}

}  // namespace proftrace::detail
