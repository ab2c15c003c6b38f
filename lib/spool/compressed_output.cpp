// GCC 12 at -O3 reports a false -Wrestrict inside libstdc++'s string code
// as inlined from Boost.Iostreams' gzip filter (GCC bug 105651). Diagnostic
// pragmas follow the warning's location, in <string>: set before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "compressed_output.hpp"

#include "export_temporary.hpp"
#include "compression_filters.hpp"

#include <boost/iostreams/device/file.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct compressed_output::impl {
  explicit impl(std::filesystem::path d) : dest(std::move(d)), temp(make_temporary(dest)) {}
  static export_temporary make_temporary(const std::filesystem::path& dest);
  std::filesystem::path dest;
  export_temporary temp;  // a killed conversion's is removed by the next one to dest
  std::ofstream file;
  boost::iostreams::filtering_ostream stream;
};

export_temporary compressed_output::impl::make_temporary(const std::filesystem::path& dest) {
  try {
    return export_temporary(dest);
  } catch (const std::system_error& e) {
    throw std::runtime_error("cannot write trace '" + dest.string() + "': " + e.code().message());
  }
}

compressed_output::compressed_output(std::filesystem::path dest) : impl_(std::make_unique<impl>(std::move(dest))) {
  impl_->file.open(impl_->temp.path(), std::ios::binary | std::ios::trunc);
  if (!impl_->file)
    throw std::runtime_error("cannot write trace '" + impl_->dest.string() + "': " + std::strerror(errno ? errno : EIO));
  push_compressor(impl_->stream, compression_of(impl_->dest));
  impl_->stream.push(impl_->file);
}

compressed_output::~compressed_output() {
  impl_->stream.reset();
  impl_->file.close();  // the temporary removes itself unless renamed
}

std::ostream& compressed_output::stream() { return impl_->stream; }

void compressed_output::commit() {
  impl_->stream.flush();
  impl_->stream.reset();  // writes the compressor's last block
  impl_->file.close();
  if (!impl_->file) throw std::runtime_error("cannot write trace '" + impl_->dest.string() + "': write failed (disk full?)");
  if (!impl_->temp.close_and_rename(impl_->dest))
    throw std::runtime_error("cannot write trace '" + impl_->dest.string() +
                             "': cannot rename the finished file: " + std::strerror(errno));
}

}  // namespace proftrace::detail
