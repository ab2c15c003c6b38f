// The command line's facade: the byte scanner of a Kineto JSON trace's events,
// which copies each event's text without parsing it.
//
//   proftrace::detail::json_events_scanner s(on_event_text, on_top_level_member);
//   while (n = read(buf)) s.feed({buf, n});
//   const bool cut = s.finish();
//
// What tools/ uses of it: json_events_scanner.
#pragma once

#include "formats/kineto_json/json_events_scanner.hpp"
