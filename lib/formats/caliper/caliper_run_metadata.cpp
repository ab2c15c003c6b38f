#include "caliper_run_metadata.hpp"

#include <boost/json.hpp>

#include <algorithm>

#include "formats/json_text.hpp"

#ifndef PROFTRACE_VERSION_TEXT
#define PROFTRACE_VERSION_TEXT "unknown"
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

namespace json = boost::json;

// Members the trace writes about itself, not metadata of the run.
constexpr std::string_view trace_keys[] = {"schemaVersion",   "deviceProperties",          "displayTimeUnit",
                                           "baseTimeNanoseconds", "traceName",             "proftrace",
                                           "clockAlignment",  "clockAlignmentAtStop",      "clockAlignmentAfterMpiInit",
                                           "proftraceMerged", "distributedInfo",           "proftraceRun"};

json::object object_of(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return !ec && v.is_object() ? std::move(v.get_object()) : json::object{};
}

std::int64_t int_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_int64() ? v->get_int64() : v && v->is_uint64() ? static_cast<std::int64_t>(v->get_uint64()) : 0;
}

std::string quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// Adiak's cluster name: the host's name without its trailing digits ("quartz12" -> "quartz").
std::string cluster_of(std::string host) {
  host = host.substr(0, host.find('.'));
  while (!host.empty() && host.back() >= '0' && host.back() <= '9') host.pop_back();
  return host;
}

}  // namespace

void caliper_run_metadata::member(std::string_view key, std::string_view json_value) {
  if (key == "baseTimeNanoseconds") {
    boost::system::error_code ec;
    const json::value v = json::parse(json_value, ec);
    if (!ec && v.is_number()) base_ns_ = v.to_number<std::int64_t>(ec);
  } else if (key == "distributedInfo") {
    read_distributed(json_value);
  } else if (key == "proftraceMerged") {
    world_size_ = int_of(object_of(json_value), "ranks");
  } else if (key == "proftraceRun") {
    read_run(json_value);
  }
  if (std::find(std::begin(trace_keys), std::end(trace_keys), key) != std::end(trace_keys)) return;
  // Thicket compares values: an object or array goes as its text.
  boost::system::error_code ec;
  const json::value v = json::parse(json_value, ec);
  if (ec) return;
  user_.emplace_back(key, v.is_object() || v.is_array() ? quoted(json::serialize(v)) : json::serialize(v));
}

void caliper_run_metadata::read_distributed(std::string_view json_value) {
  const json::object o = object_of(json_value);
  rank_ = int_of(o, "rank");
  has_rank_ = o.contains("rank");
  world_size_ = int_of(o, "world_size");
  if (const json::value* h = o.if_contains("host"); h && h->is_string()) host_ = std::string_view(h->get_string());
}

void caliper_run_metadata::read_run(std::string_view json_value) {
  for (const json::key_value_pair& kv : object_of(json_value)) {
    if (!kv.value().is_string()) continue;
    const std::string_view value = kv.value().get_string();
    if (kv.key() != "hostname") run_.emplace_back(kv.key(), quoted(value));
    else if (host_.empty()) host_ = value;
  }
}

void caliper_run_metadata::write(std::string& out, const profile_facts& facts) const {
  std::vector<std::pair<std::string, std::string>> all = user_;
  const auto put = [&](std::string_view key, std::string value) {
    for (const auto& [k, v] : all)
      if (k == key) return;  // the user's own key wins
    all.emplace_back(key, std::move(value));
  };
  if (base_ns_ > 0) put("launchdate", std::to_string(base_ns_ / 1'000'000'000));
  for (const auto& [key, value] : run_) put(key, value);
  std::string hosts = host_;
  if (!facts.hosts.empty()) {
    hosts.clear();
    for (const std::string& h : facts.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  }
  if (!hosts.empty()) {
    put("hostname", quoted(hosts));
    put("cluster", quoted(cluster_of(facts.hosts.empty() ? host_ : *facts.hosts.begin())));
  }
  const std::int64_t ranks = world_size_ > 0 ? world_size_ : static_cast<std::int64_t>(std::max<std::size_t>(facts.ranks, 1));
  if (facts.ranks <= 1 && has_rank_) put("mpi.rank", std::to_string(rank_));  // no rank column then
  put("mpi.world.size", std::to_string(ranks));
  put("jobsize", std::to_string(ranks));
  put("proftrace.version", quoted(PROFTRACE_VERSION_TEXT));
  for (const auto& [key, value] : all) {
    out += ", ";
    append_json_string(out, key);
    out += ": ";
    out += value;
  }
}

}  // namespace proftrace::detail
