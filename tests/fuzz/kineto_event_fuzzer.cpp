// libFuzzer target: kineto_event_reader, which reads each event of a JSON
// trace converted to .pftrace, must refuse exactly the texts
// boost::json::parse refuses and read the same fields and args from the
// others (tests/support/kineto_event_check.hpp); the record written from them must
// read back the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "../support/kineto_event_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static proftrace::detail::kineto_event_reader reader;  // reused, as the converter does
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const std::string why = test_kineto::kineto_event_mismatch(reader, text); !why.empty()) {
    std::fprintf(stderr, "kineto_event_fuzzer: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
