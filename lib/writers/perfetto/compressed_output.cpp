// GCC 12 at -O3 reports a false -Wrestrict inside libstdc++'s string code
// as inlined from Boost.Iostreams' gzip filter (GCC bug 105651). Diagnostic
// pragmas follow the warning's location, in <string>: set before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "writers/perfetto/compressed_output.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

struct compressed_output::impl {
  std::filesystem::path dest, temp;
  std::ofstream file;
  boost::iostreams::filtering_ostream stream;
  bool committed = false;
};

compressed_output::compressed_output(std::filesystem::path dest) : impl_(std::make_unique<impl>()) {
  namespace io = boost::iostreams;
  impl_->dest = std::move(dest);
  impl_->temp = impl_->dest;
  impl_->temp += ".partial";
  impl_->file.open(impl_->temp, std::ios::binary | std::ios::trunc);
  if (!impl_->file)
    throw std::runtime_error("cannot write trace '" + impl_->dest.string() + "': " + std::strerror(errno ? errno : EIO));
  const std::string name = impl_->dest.filename().string();
  if (name.ends_with(".gz")) impl_->stream.push(io::gzip_compressor(io::gzip_params(io::zlib::best_speed)));
  if (name.ends_with(".zst")) impl_->stream.push(io::zstd_compressor(io::zstd_params(io::zstd::best_speed)));
  impl_->stream.push(impl_->file);
}

compressed_output::~compressed_output() {
  if (impl_->committed) return;
  impl_->stream.reset();
  impl_->file.close();
  std::error_code ec;
  std::filesystem::remove(impl_->temp, ec);
}

std::ostream& compressed_output::stream() { return impl_->stream; }

void compressed_output::commit() {
  impl_->stream.flush();
  impl_->stream.reset();  // writes the compressor's last block
  impl_->file.close();
  if (!impl_->file) throw std::runtime_error("cannot write trace '" + impl_->dest.string() + "': write failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(impl_->temp, impl_->dest, ec);
  if (ec) throw std::runtime_error("cannot write trace '" + impl_->dest.string() + "': cannot rename the finished file: " + ec.message());
  impl_->committed = true;
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
