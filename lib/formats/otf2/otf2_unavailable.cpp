// The absence of libotf2: the message every build can give (tests check it),
// and, in a build without libotf2, the converter that gives it.
#include "kineto_to_otf2.hpp"

#include <stdexcept>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

std::string otf2_unavailable_message(const std::filesystem::path& output) {
  return "proftrace: cannot write '" + output.string() +
         "': this proftrace was built without OTF2 (libotf2, pkg-config module otf2; Debian: libotf2-trace-dev); "
         "install it and build with -DPROFTRACE_WITH_OTF2=ON or AUTO, or write .json or .pftrace";
}

#if !PROFTRACE_WITH_OTF2
otf2_conversion kineto_to_otf2(const std::filesystem::path&, const std::filesystem::path& output) {
  throw std::runtime_error(otf2_unavailable_message(output));
}
#endif

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
