// The command line's facade: reading a .pftrace event by event.
//
//   proftrace::detail::perfetto_callbacks cb;
//   cb.on_event = [&](const proftrace::detail::decoded_event& e) { return keep_going; };
//   const proftrace::detail::perfetto_read_result r = proftrace::detail::read_perfetto("t.pftrace", cb);
//
// What tools/ uses of it: read_perfetto, perfetto_callbacks, decoded_event,
// decoded_track, decoded_value, decoded_json_writer, perfetto_read_result,
// perfetto_error, looks_like_perfetto, max_open_slices, ns_after.
#pragma once

#include "formats/perfetto/perfetto_reader.hpp"
