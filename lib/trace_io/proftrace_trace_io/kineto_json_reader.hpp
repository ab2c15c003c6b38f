// The command line's facade: the one reader of Kineto JSON text that the
// converter and merge share, and the file it reads (decompressed by suffix).
//
//   proftrace::detail::kineto_json_reader reader({.on_event = on_event_text, .on_member = {}}, {});
//   proftrace::detail::kineto_json_text text(path);
//   if (!reader.read(text.stream())) ...  // the stream failed
//   const bool cut = reader.finish();
//
// What tools/ uses of them: kineto_json_reader, kineto_json_text.
#pragma once

#include "formats/kineto_json/kineto_json_reader.hpp"
#include "formats/kineto_json/kineto_json_text.hpp"
