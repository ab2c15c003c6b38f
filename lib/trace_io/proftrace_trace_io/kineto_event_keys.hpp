// The command line's facade: the keys of a Kineto event and of its args,
// told apart once per key.
//
//   switch (proftrace::detail::identify_event_key(key)) { case proftrace::detail::event_key::ts: ... }
//
// What tools/ uses of it: event_key, identify_event_key (and the args' keys).
#pragma once

#include "formats/kineto_json/kineto_event_keys.hpp"
