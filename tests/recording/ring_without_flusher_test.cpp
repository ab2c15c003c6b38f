// In a process where no flusher was ever started, `block` must not hang: a
// full ring drops and counts instead.
#include <doctest/doctest.h>

#include <vector>

#include "recording/registry.hpp"

namespace pd = proftrace::detail;

TEST_CASE("block without a flusher degrades to a counted drop instead of hanging") {
  REQUIRE_FALSE(pd::flusher_running());
  pd::set_overflow_policy(proftrace::overflow_policy::block);
  pd::ring r(64);
  for (int i = 0; i < 64; ++i) r.push(1, 0, 0, pd::event_kind::instant);
  CHECK(r.dropped() == 0);
  r.push(2, 0, 0, pd::event_kind::instant);  // returns: nobody will ever make room
  r.push(3, 0, 0, pd::event_kind::instant);
  CHECK(r.dropped() == 2);
  std::vector<pd::event> buf(128);
  std::size_t first = 0;
  CHECK(r.consume(buf.data(), buf.size(), &first) == 64);  // the ring as filled: no record of a wait
}
