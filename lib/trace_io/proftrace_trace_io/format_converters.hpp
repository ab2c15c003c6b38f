// The command line's facade: the converters between Kineto JSON and .pftrace.
//
//   proftrace::detail::kineto_to_perfetto("t.json", "t.pftrace");
//   proftrace::detail::decoded_json_writer w(out);  // a .pftrace's events as Kineto JSON
//   proftrace::detail::read_perfetto("t.pftrace", w.callbacks());
//
// What tools/ uses of them: kineto_to_perfetto, decoded_json_writer and
// decoded_json.
#pragma once

#include "formats/perfetto/kineto_to_perfetto.hpp"
#include "formats/perfetto/perfetto_to_kineto.hpp"
