// read_rank_profile: a job's report back from its Caliper profile (rank_profile.hpp).
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "rank_profile.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

namespace json = boost::json;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw std::runtime_error(path.string() + ": not a consistent rank profile: " + why);
}

std::int64_t integer(const json::value& v) {
  boost::system::error_code ec;
  const double d = v.to_number<double>(ec);
  if (ec) throw std::runtime_error("a number expected");
  return static_cast<std::int64_t>(std::llround(d));
}

std::int64_t nanoseconds(const json::value& seconds) {
  boost::system::error_code ec;
  const double s = seconds.to_number<double>(ec);
  if (ec) throw std::runtime_error("a time expected");
  return static_cast<std::int64_t>(std::llround(s * 1e9));
}

std::size_t column(const json::array& columns, std::string_view name) {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].is_string() && columns[i].get_string() == name) return i;
  return columns.size();
}

// Each rank's (calls, total, self) of each node, from the data rows.
std::vector<std::vector<rank_value>> per_rank_values(const json::object& doc, std::int64_t only_rank) {
  const json::array& columns = doc.at("columns").as_array();
  const std::size_t node_at = column(columns, "path"), rank_at = column(columns, "mpi.rank"),
                    calls_at = column(columns, "count"), self_at = column(columns, "sum#time.duration"),
                    total_at = column(columns, "inclusive#sum#time.duration");
  if (node_at == columns.size() || calls_at == columns.size() || self_at == columns.size() || total_at == columns.size())
    throw std::runtime_error("a column missing");
  std::vector<std::vector<rank_value>> values(doc.at("nodes").as_array().size());
  for (const json::value& v : doc.at("data").as_array()) {
    const json::array& row = v.as_array();
    const rank_value value{static_cast<int>(rank_at == columns.size() ? only_rank : integer(row.at(rank_at))),
                           integer(row.at(calls_at)), nanoseconds(row.at(total_at)), nanoseconds(row.at(self_at))};
    const auto node = static_cast<std::size_t>(integer(row.at(node_at)));
    if (node >= values.size()) throw std::runtime_error("a row of no node");
    if (value.calls != 0 || value.total_ns != 0 || value.self_ns != 0) values[node].push_back(value);
  }
  return values;
}

// Without per-rank values: each node's figures from its one data row (the
// sums, min / max with their ranks, ranks_with_calls; the mean is the sum's).
std::vector<rank_average> node_figures(const json::object& doc) {
  const json::array& columns = doc.at("columns").as_array();
  const auto at = [&](std::string_view name) {
    const std::size_t i = column(columns, name);
    if (i == columns.size()) throw std::runtime_error("no column " + std::string(name));
    return i;
  };
  const std::size_t node_at = at("path"), calls_at = at("count"), self_at = at("sum#time.duration"),
                    total_at = at("inclusive#sum#time.duration"), min_at = at("min#inclusive#sum#time.duration"),
                    max_at = at("max#inclusive#sum#time.duration"), min_rank_at = at("proftrace.min_rank"),
                    max_rank_at = at("proftrace.max_rank"), with_calls_at = at("proftrace.ranks_with_calls");
  std::vector<rank_average> figures(doc.at("nodes").as_array().size());
  for (const json::value& v : doc.at("data").as_array()) {
    const json::array& row = v.as_array();
    const auto node = static_cast<std::size_t>(integer(row.at(node_at)));
    if (node >= figures.size()) throw std::runtime_error("a row of no node");
    rank_average& r = figures[node];
    r.calls = integer(row.at(calls_at)), r.self_cpu_time_total_ns = nanoseconds(row.at(self_at));
    r.cpu_time_total_ns = nanoseconds(row.at(total_at));
    r.min_ns = nanoseconds(row.at(min_at)), r.max_ns = nanoseconds(row.at(max_at));
    r.min_rank = static_cast<int>(integer(row.at(min_rank_at))), r.max_rank = static_cast<int>(integer(row.at(max_rank_at)));
    r.ranks_with_calls = static_cast<int>(integer(row.at(with_calls_at)));
  }
  return figures;
}

// The row's key, its stack (innermost first) from the nodes above it.
void name_row(const json::array& nodes, std::size_t node, rank_average& r) {
  r.key = std::string(nodes.at(node).at("label").as_string());
  const json::value* parent = nodes.at(node).as_object().if_contains("parent");
  for (std::size_t hops = 0; parent && hops < nodes.size(); ++hops) {
    const json::object& above = nodes.at(static_cast<std::size_t>(integer(*parent))).as_object();
    r.stack.emplace_back(above.at("label").as_string());
    parent = above.if_contains("parent");
  }
}

// Sums and extremes over every rank of the job (a rank without a row counts 0, ties to the lower rank).
void add_rank_figures(rank_average& r, std::vector<rank_value> values, int ranks) {
  std::sort(values.begin(), values.end(), [](const rank_value& a, const rank_value& b) { return a.rank < b.rank; });
  r.ranks = ranks;
  r.per_rank = std::move(values);
  r.ranks_with_calls = static_cast<int>(r.per_rank.size());
  bool first = true;
  int expected = 0;  // the lowest rank not yet seen: a 0 there if there is a gap
  const auto consider = [&](std::int64_t ns, int rank) {
    if (first || ns < r.min_ns) r.min_ns = ns, r.min_rank = rank;
    if (first || ns > r.max_ns) r.max_ns = ns, r.max_rank = rank;
    first = false;
  };
  for (const rank_value& v : r.per_rank) {
    if (v.rank > expected) consider(0, expected);
    consider(v.total_ns, v.rank);
    expected = v.rank + 1;
    r.calls += v.calls, r.cpu_time_total_ns += v.total_ns, r.self_cpu_time_total_ns += v.self_ns;
  }
  if (expected < ranks) consider(0, expected);
  r.mean_ns = ranks > 0 ? static_cast<double>(r.cpu_time_total_ns) / ranks : 0.0;
}

void add_sums(rank_average& r, const json::object& row) {
  const json::array& sums = row.at("sums").as_array();
  std::int64_t* into[] = {&r.cuda_time_total_ns, &r.self_cuda_time_total_ns, &r.cpu_memory_usage,
                          &r.self_cpu_memory_usage, &r.cuda_memory_usage, &r.self_cuda_memory_usage, &r.flops};
  if (sums.size() != std::size(into)) throw std::runtime_error("sums of another length");
  for (std::size_t i = 0; i < sums.size(); ++i) *into[i] = sums[i].to_number<std::int64_t>();
  for (const json::value& c : row.at("counters").as_array()) {
    const json::array& counter = c.as_array();
    r.counters.push_back({std::string(counter.at(0).as_string()), counter.at(1).to_number<std::int64_t>(),
                          counter.at(2).to_number<std::int64_t>()});
  }
}

void add_node_figures(rank_average& r, const rank_average& figures, int ranks) {
  r.calls = figures.calls, r.cpu_time_total_ns = figures.cpu_time_total_ns;
  r.self_cpu_time_total_ns = figures.self_cpu_time_total_ns;
  r.min_ns = figures.min_ns, r.max_ns = figures.max_ns, r.min_rank = figures.min_rank, r.max_rank = figures.max_rank;
  r.ranks_with_calls = figures.ranks_with_calls;
  r.ranks = ranks;
  r.mean_ns = ranks > 0 ? static_cast<double>(r.cpu_time_total_ns) / ranks : 0.0;
}

rank_averages report_of(const json::object& doc) {
  rank_averages report;
  report.ranks = static_cast<int>(integer(doc.at("mpi.world.size")));
  const json::value* note = doc.if_contains("proftrace.per_rank_note");
  if (note) report.per_rank_note = std::string(note->as_string());
  const json::value* only = doc.if_contains("mpi.rank");
  const auto values = note ? std::vector<std::vector<rank_value>>() : per_rank_values(doc, only ? integer(*only) : 0);
  const auto figures = note ? node_figures(doc) : std::vector<rank_average>();
  const json::array& nodes = doc.at("nodes").as_array();
  const json::value rows = json::parse(doc.at("proftrace.rank_rows").as_string());
  for (const json::value& v : rows.as_array()) {
    const json::object& row = v.as_object();
    const auto node = static_cast<std::size_t>(integer(row.at("node")));
    if (node >= nodes.size()) throw std::runtime_error("a row of no node");
    rank_average& r = report.rows.emplace_back();
    name_row(nodes, node, r);
    if (note) add_node_figures(r, figures[node], report.ranks);
    else add_rank_figures(r, values[node], report.ranks);
    add_sums(r, row);
  }
  return report;
}

}  // namespace

std::optional<rank_averages> read_rank_profile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const json::value doc = json::parse(text.str(), ec);
  if (ec || !doc.is_object()) throw std::runtime_error(path.string() + ": not JSON: " + ec.message());
  const json::value* kind = doc.as_object().if_contains("proftrace.report");
  if (!kind || !kind->is_string() || kind->get_string() != "rank_averages") return std::nullopt;
  try {
    return report_of(doc.as_object());
  } catch (const std::exception& e) {  // boost::json's at() and as_*() throw on a missing or mistyped member
    fail(path, e.what());
  }
}

}  // namespace proftrace::detail
