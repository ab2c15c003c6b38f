// libFuzzer target: a rank partial (lib/aggregation/rank_partial.hpp), the
// bytes one rank receives from another during the job report's reduction,
// on arbitrary bytes: parsing either throws std::runtime_error or gives a
// partial that serialises back to the same bytes, and combining it with a
// valid neighbour and decoding never fails any other way.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aggregation/rank_partial.hpp"

namespace pd = proftrace::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pd::rank_partial parsed;
  try {
    parsed = pd::parse_rank_partial(bytes);
  } catch (const std::runtime_error&) {
    return 0;
  }
  if (pd::serialize_rank_partial(parsed) != bytes) {
    std::fprintf(stderr, "a partial that does not serialise back to its bytes\n");
    std::abort();
  }
  proftrace::event_average row;
  row.key = "solve";
  row.count = 1;
  row.cpu_time_total_ns = 10;
  // The neighbour just above its range (or just below, where there is no room above).
  const int neighbour = parsed.high_rank < INT32_MAX ? parsed.high_rank + 1 : parsed.low_rank - 1;
  if (neighbour < 0) return 0;
  std::string combined = pd::encode_rank_partial({row}, neighbour, parsed.per_rank_values);
  try {
    pd::combine_rank_partials(combined, bytes);
  } catch (const std::runtime_error&) {  // counts that overflow a row's int ranks_with_calls, ... are refused
    return 0;
  }
  (void)pd::decode_rank_report(combined).csv();
  return 0;
}
