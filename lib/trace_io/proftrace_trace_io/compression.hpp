// The command line's facade: gzip and zstd streams, as the library writes and
// reads its traces.
//
//   boost::iostreams::filtering_istream in;
//   proftrace::detail::push_decompressor(in, proftrace::detail::compression_of(path));
//   proftrace::detail::compressed_output out(path);  // compressed by its suffix
//
// What tools/ uses of them: push_compressor, push_decompressor,
// compressed_output.
#pragma once

#include "spool/compressed_output.hpp"
#include "spool/compression_filters.hpp"
