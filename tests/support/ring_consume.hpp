// Everything a ring holds, consumed at once as its events (the ring suites).
#pragma once

#include <cstddef>
#include <vector>

#include "proftrace/detail/ring.hpp"

namespace test_support {

inline std::vector<proftrace::detail::event> consume_all(proftrace::detail::ring& r) {
  std::vector<proftrace::detail::event> out, buf(256);
  for (;;) {
    std::size_t first = 0;
    const std::size_t n = r.consume(buf.data(), buf.size(), &first);
    if (n == 0) return out;
    out.insert(out.end(), buf.begin() + static_cast<std::ptrdiff_t>(first),
               buf.begin() + static_cast<std::ptrdiff_t>(first + n));
  }
}

}  // namespace test_support
