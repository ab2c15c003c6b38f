#include "rank_partial.hpp"

#include <array>
#include <climits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "rank_partial_bytes.hpp"
#include "torch_rules.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

constexpr std::string_view magic = "PTRK";
constexpr std::uint8_t version = 2;
constexpr std::size_t string_bytes = 4;  // the least a string takes: its length
constexpr std::size_t per_rank_bytes = 4 + 3 * 8;
constexpr std::size_t counter_bytes = string_bytes + 2 * 8;

// The ten sums in the order the layout has them (Row: rank_average, const or not).
template <class Row>
std::array<decltype(&std::declval<Row&>().calls), 10> sums_of(Row& r) {
  return {&r.calls, &r.cpu_time_total_ns, &r.self_cpu_time_total_ns, &r.cuda_time_total_ns,
          &r.self_cuda_time_total_ns, &r.cpu_memory_usage, &r.self_cpu_memory_usage, &r.cuda_memory_usage,
          &r.self_cuda_memory_usage, &r.flops};
}

std::string identity_of(const rank_average& r) {
  std::string id = r.key;
  for (const std::string& frame : r.stack) (id += '\x1f') += frame;
  return id;
}

void write_row(partial_writer& w, const rank_average& r, bool per_rank_values) {
  w.text(r.key);
  w.u32(static_cast<std::uint32_t>(r.stack.size()));
  for (const std::string& frame : r.stack) w.text(frame);
  for (const std::int64_t* sum : sums_of(r)) w.i64(*sum);
  w.u32(static_cast<std::uint32_t>(r.counters.size()));
  for (const counter_total& c : r.counters) w.text(c.name), w.i64(c.total), w.i64(c.self);
  w.i64(r.min_ns), w.i32(r.min_rank), w.i64(r.max_ns), w.i32(r.max_rank);
  if (!per_rank_values) return w.i32(r.ranks_with_calls);
  w.u32(static_cast<std::uint32_t>(r.per_rank.size()));
  for (const rank_value& v : r.per_rank) w.i32(v.rank), w.i64(v.calls), w.i64(v.total_ns), w.i64(v.self_ns);
}

// The per-rank values must lie in the range, in rank order, and the min and
// max must be ranks of the range.
void check_row(const rank_average& r, int low, int high) {
  if (r.ranks_with_calls < 0 || r.ranks_with_calls - 1 > high - low)
    partial_reader::fail("a key on more ranks than the range has");
  int last = low - 1;
  for (const rank_value& v : r.per_rank) {
    if (v.rank <= last || v.rank > high) partial_reader::fail("per-rank values out of order or out of the range");
    last = v.rank;
  }
  if (r.min_rank < low || r.min_rank > high || r.max_rank < low || r.max_rank > high || r.min_ns > r.max_ns)
    partial_reader::fail("a min or max outside the range");
}

rank_average read_row(partial_reader& in, int low, int high, bool per_rank_values) {
  rank_average r;
  r.key = in.text();
  r.stack.resize(in.count(string_bytes));
  for (std::string& frame : r.stack) frame = in.text();
  for (std::int64_t* sum : sums_of(r)) *sum = in.i64();
  r.counters.resize(in.count(counter_bytes));
  for (counter_total& c : r.counters) c.name = in.text(), c.total = in.i64(), c.self = in.i64();
  r.min_ns = in.i64(), r.min_rank = in.i32(), r.max_ns = in.i64(), r.max_rank = in.i32();
  if (per_rank_values) {
    r.per_rank.resize(in.count(per_rank_bytes));
    for (rank_value& v : r.per_rank) v.rank = in.i32(), v.calls = in.i64(), v.total_ns = in.i64(), v.self_ns = in.i64();
    r.ranks_with_calls = static_cast<int>(r.per_rank.size());
  } else {
    r.ranks_with_calls = in.i32();
  }
  check_row(r, low, high);
  return r;
}

// (value, rank) of one side for a key: absent there, 0 at its lowest rank.
struct extreme {
  std::int64_t ns;
  int rank;
};
extreme smaller(extreme a, extreme b) { return b.ns < a.ns || (b.ns == a.ns && b.rank < a.rank) ? b : a; }
extreme larger(extreme a, extreme b) { return b.ns > a.ns || (b.ns == a.ns && b.rank < a.rank) ? b : a; }

void add_counters(rank_average& into, const rank_average& other) {
  for (const counter_total& c : other.counters) {
    counter_total* mine = nullptr;
    for (counter_total& m : into.counters)
      if (m.name == c.name) mine = &m;
    if (!mine) mine = &into.counters.emplace_back(counter_total{c.name, 0, 0});
    add_saturating(mine->total, c.total);
    add_saturating(mine->self, c.self);
  }
}

// `lower`'s row of a key (null: absent from the lower range) and `upper`'s.
rank_average merged_row(const rank_average* lower, const rank_average* upper, int lower_low, int upper_low) {
  rank_average r = lower ? *lower : *upper;
  if (!lower || !upper) {
    // The range without the key counts 0 at its lowest rank: a candidate for both.
    const extreme absent{0, lower ? upper_low : lower_low};
    const extreme lo = smaller({r.min_ns, r.min_rank}, absent), hi = larger({r.max_ns, r.max_rank}, absent);
    r.min_ns = lo.ns, r.min_rank = lo.rank, r.max_ns = hi.ns, r.max_rank = hi.rank;
    return r;
  }
  const auto into = sums_of(r);
  const auto from = sums_of(*upper);
  for (std::size_t i = 0; i < into.size(); ++i) add_saturating(*into[i], *from[i]);
  add_counters(r, *upper);
  const extreme lo = smaller({lower->min_ns, lower->min_rank}, {upper->min_ns, upper->min_rank});
  const extreme hi = larger({lower->max_ns, lower->max_rank}, {upper->max_ns, upper->max_rank});
  r.min_ns = lo.ns, r.min_rank = lo.rank, r.max_ns = hi.ns, r.max_rank = hi.rank;
  r.per_rank.insert(r.per_rank.end(), upper->per_rank.begin(), upper->per_rank.end());
  r.ranks_with_calls += upper->ranks_with_calls;
  return r;
}

rank_partial merged(const rank_partial& lower, const rank_partial& upper) {
  rank_partial out{lower.low_rank, upper.high_rank, lower.per_rank_values, {}};
  std::unordered_map<std::string, std::size_t> upper_rows;
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < upper.rows.size(); ++i) upper_rows.emplace(identity_of(upper.rows[i]), i);
  for (const rank_average& row : lower.rows) {
    const auto found = upper_rows.find(identity_of(row));
    const rank_average* other = found == upper_rows.end() ? nullptr : &upper.rows[found->second];
    out.rows.push_back(merged_row(&row, other, lower.low_rank, upper.low_rank));
    seen.insert(identity_of(row));
  }
  for (const rank_average& row : upper.rows)
    if (!seen.contains(identity_of(row))) out.rows.push_back(merged_row(nullptr, &row, lower.low_rank, upper.low_rank));
  return out;
}

}  // namespace

std::string serialize_rank_partial(const rank_partial& partial) {
  std::string out;
  partial_writer w(out);
  w.raw(magic);
  w.u8(version);
  w.u8(partial.per_rank_values ? 1 : 0);
  w.i32(partial.low_rank), w.i32(partial.high_rank);
  w.u32(static_cast<std::uint32_t>(partial.rows.size()));
  for (const rank_average& r : partial.rows) write_row(w, r, partial.per_rank_values);
  return out;
}

rank_partial parse_rank_partial(std::string_view bytes) {
  partial_reader in(bytes);
  if (in.left() < magic.size() + 1 || in.raw(magic.size()) != magic) partial_reader::fail("not a rank partial");
  if (const std::uint8_t v = in.u8(); v != version) partial_reader::fail("version " + std::to_string(v));
  rank_partial p;
  const std::uint8_t flags = in.u8();
  if (flags > 1) partial_reader::fail("flags " + std::to_string(flags));
  p.per_rank_values = flags == 1;
  p.low_rank = in.i32(), p.high_rank = in.i32();
  // INT_MAX is no rank (MPI's ranks are below the int's size), and the range's size must be an int.
  if (p.low_rank < 0 || p.high_rank < p.low_rank || p.high_rank == INT_MAX)
    partial_reader::fail("an empty, negative or too large rank range");
  const std::uint32_t rows = in.count(string_bytes * 3);
  std::unordered_map<std::string, int> keys;
  for (std::uint32_t i = 0; i < rows; ++i) {
    p.rows.push_back(read_row(in, p.low_rank, p.high_rank, p.per_rank_values));
    if (!keys.emplace(identity_of(p.rows.back()), 0).second) partial_reader::fail("a key twice");
  }
  if (in.left() != 0) partial_reader::fail("bytes after the last row");
  return p;
}

std::string encode_rank_partial(const std::vector<event_average>& rows, int rank, bool per_rank_values) {
  rank_partial p{rank, rank, per_rank_values, {}};
  std::unordered_map<std::string, std::size_t> index;
  for (const event_average& e : rows) {
    rank_average mine;
    mine.key = e.key;
    mine.stack = e.stack;
    const auto [it, fresh] = index.try_emplace(identity_of(mine), p.rows.size());
    rank_average& r = fresh ? p.rows.emplace_back(std::move(mine)) : p.rows[it->second];
    for (auto [sum, value] : {std::pair{&r.calls, e.count}, {&r.cpu_time_total_ns, e.cpu_time_total_ns},
                              {&r.self_cpu_time_total_ns, e.self_cpu_time_total_ns},
                              {&r.cuda_time_total_ns, e.cuda_time_total_ns},
                              {&r.self_cuda_time_total_ns, e.self_cuda_time_total_ns},
                              {&r.cpu_memory_usage, e.cpu_memory_usage},
                              {&r.self_cpu_memory_usage, e.self_cpu_memory_usage},
                              {&r.cuda_memory_usage, e.cuda_memory_usage},
                              {&r.self_cuda_memory_usage, e.self_cuda_memory_usage}, {&r.flops, e.flops}})
      add_saturating(*sum, value);
    rank_average counted;
    counted.counters = e.counters;
    add_counters(r, counted);
  }
  for (rank_average& r : p.rows) {
    r.min_ns = r.max_ns = r.cpu_time_total_ns;
    r.min_rank = r.max_rank = rank;
    if (per_rank_values) r.per_rank = {rank_value{rank, r.calls, r.cpu_time_total_ns, r.self_cpu_time_total_ns}};
    r.ranks_with_calls = 1;
  }
  return serialize_rank_partial(p);
}

void combine_rank_partials(std::string& into, std::string_view other) {
  const rank_partial b = parse_rank_partial(other);
  if (into.empty()) return void(into.assign(other));
  const rank_partial a = parse_rank_partial(into);
  const bool a_lower = a.high_rank < b.low_rank;
  const rank_partial& lower = a_lower ? a : b;
  const rank_partial& upper = a_lower ? b : a;
  if (a.per_rank_values != b.per_rank_values)
    partial_reader::fail("one partial has per-rank values and the other not (PROFTRACE_RANK_VALUES_MAX differs "
                         "between ranks?)");
  if (static_cast<std::int64_t>(lower.high_rank) + 1 != upper.low_rank)
    partial_reader::fail("ranges " + std::to_string(a.low_rank) + "-" + std::to_string(a.high_rank) + " and " +
                         std::to_string(b.low_rank) + "-" + std::to_string(b.high_rank) + " are not adjacent");
  into = serialize_rank_partial(merged(lower, upper));
}

rank_averages decode_rank_report(std::string_view partial) {
  rank_partial p = parse_rank_partial(partial);
  rank_averages report;
  report.ranks = p.high_rank - p.low_rank + 1;
  report.rows = std::move(p.rows);
  if (!p.per_rank_values) report.per_rank_note = "the partials carried none";
  for (rank_average& r : report.rows) {
    r.ranks = report.ranks;
    r.mean_ns = static_cast<double>(r.cpu_time_total_ns) / report.ranks;
  }
  return report;
}

}  // namespace proftrace::detail
