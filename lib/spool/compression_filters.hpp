// Internal: the Boost.Iostreams filter of each compression of the format
// table (formats/trace_formats.hpp), for every reader and writer of traces.
//
//   boost::iostreams::filtering_istream in;
//   push_decompressor(in, compression_of(path));
//   in.push(file);
#pragma once

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include "formats/trace_formats.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// Iostreams' default buffers are a few hundred bytes: each would be one call
// into the compressor.
inline constexpr std::streamsize compressor_buffer = 1 << 16;

// At the fastest level: a trace's repetitive JSON compresses about as well
// (bench/README.md: "Flusher"), and exporting is on the program's path.
inline void push_compressor(boost::iostreams::filtering_ostream& out, compression c) {
  namespace io = boost::iostreams;
  switch (c) {
    case compression::gzip:
      out.push(io::gzip_compressor(io::gzip_params(io::zlib::best_speed), compressor_buffer), compressor_buffer);
      break;
    case compression::zstd:
      out.push(io::zstd_compressor(io::zstd_params(io::zstd::best_speed), compressor_buffer), compressor_buffer);
      break;
    case compression::none: break;
  }
}

inline void push_decompressor(boost::iostreams::filtering_istream& in, compression c) {
  namespace io = boost::iostreams;
  switch (c) {
    case compression::gzip: in.push(io::gzip_decompressor()); break;
    case compression::zstd: in.push(io::zstd_decompressor()); break;
    case compression::none: break;
  }
}

}  // namespace proftrace::detail
