// The command line's facade: the table of trace formats and compressions,
// which every choice by file name asks.
//
//   const proftrace::detail::trace_name n = proftrace::detail::trace_name_of(path);
//   if (n.format == proftrace::trace_format::perfetto) ...
//
// What tools/ uses of it: trace_name, parse_trace_name, trace_name_of,
// compression, compression_of, suffix_of, row_of, format_row (export_only:
// a .otf2 or .cali.json is written, never read) and convert_trace (to an
// export-only format: convert and merge write them through it).
#pragma once

#include "formats/trace_formats.hpp"
