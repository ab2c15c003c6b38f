// GPU activities in Kineto's layout: kernel, copy, set and API events with
// their args, occupancy estimates, ac2g flows (one per launch, also for a
// graph launch whose kernels share a correlation id), GPU process and stream
// names, deviceProperties. Built without any CUDA header.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "formats/kineto_json/gpu_trace_writer.hpp"

namespace {

using namespace proftrace::detail;

constexpr std::int64_t base = 1'700'000'000'000'000'000;

gpu_device_properties h100() {
  gpu_device_properties d;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.total_global_mem = 85'000'000'000;
  d.compute_major = 9;
  d.max_threads_per_block = 1024;
  d.max_threads_per_multiprocessor = 2048;
  d.regs_per_block = 65536;
  d.regs_per_multiprocessor = 65536;
  d.warp_size = 32;
  d.shared_mem_per_block = 49152;
  d.shared_mem_per_multiprocessor = 233472;
  d.num_sms = 132;
  d.shared_mem_per_block_optin = 232448;
  d.max_blocks_per_multiprocessor = 32;
  return d;
}

gpu_activity api(const char* name, std::uint32_t correlation, std::int64_t start, std::uint64_t external) {
  gpu_activity a;
  a.kind = gpu_activity_kind::runtime;
  a.name = name;
  a.start_ns = base + start;
  a.end_ns = base + start + 5000;
  a.thread = 77;
  a.cbid = 211;
  a.correlation = correlation;
  a.external_id = external;
  return a;
}

gpu_activity kernel(const char* name, std::uint32_t correlation, std::int64_t start, std::uint32_t stream) {
  gpu_activity k;
  k.kind = gpu_activity_kind::kernel;
  k.name = name;
  k.start_ns = base + start;
  k.end_ns = base + start + 4928;
  k.queued_ns = base + start - 1000;
  k.device = 0;
  k.context = 1;
  k.stream = stream;
  k.correlation = correlation;
  k.external_id = 112;
  k.grid = {4, 106, 1};
  k.block = {128, 1, 1};
  k.registers_per_thread = 30;
  return k;
}

boost::json::array parse(const std::string& events) { return boost::json::parse("[" + events + "]").as_array(); }

std::vector<boost::json::object> with(const boost::json::array& events, const char* key, const char* value) {
  std::vector<boost::json::object> out;
  for (const auto& e : events)
    if (e.as_object().contains(key) && e.as_object().at(key).as_string() == value) out.push_back(e.as_object());
  return out;
}

}  // namespace

TEST_CASE("occupancy estimate: blocks and warps per SM, and the resident-block limits") {
  const gpu_device_properties d = h100();
  gpu_activity k = kernel("k", 1, 0, 7);
  kernel_occupancy o = estimate_occupancy(k, d);
  REQUIRE(o.known);
  CHECK(o.blocks_per_sm == doctest::Approx(424.0 / 132));
  CHECK(o.warps_per_sm == doctest::Approx(424.0 / 132 * 4));
  CHECK(o.occupancy_percent == doctest::Approx(424.0 / 132 * 4 / 64 * 100));  // grid-bound
  k.grid = {1320, 1, 1};                                                      // 10 blocks per SM wanted
  k.registers_per_thread = 128;                                               // 65536 / (128 * 128) = 4 resident
  CHECK(estimate_occupancy(k, d).occupancy_percent == doctest::Approx(4.0 * 4 / 64 * 100));
  k.registers_per_thread = 16;
  k.shared_memory = 100'000;  // 2 resident blocks by shared memory
  CHECK(estimate_occupancy(k, d).occupancy_percent == doctest::Approx(2.0 * 4 / 64 * 100));
  k.block = {0, 1, 1};
  CHECK_FALSE(estimate_occupancy(k, d).known);
  CHECK_FALSE(estimate_occupancy(kernel("k", 1, 0, 7), gpu_device_properties{}).known);
}

TEST_CASE("kernels, copies and launches in Kineto's layout, with flows and track names") {
  std::vector<gpu_activity> batch;
  batch.push_back(api("cudaLaunchKernel", 135071, 0, 112));
  batch.push_back(kernel("my_kernel", 135071, 40'000, 7));
  gpu_activity copy;
  copy.kind = gpu_activity_kind::memcpy;
  copy.name = "Memcpy HtoD (Pageable -> Device)";
  copy.start_ns = base + 60'000;
  copy.end_ns = base + 61'280;
  copy.stream = 7;
  copy.context = 1;
  copy.correlation = 135139;
  copy.bytes = 256;
  copy.external_id = 600;
  batch.push_back(copy);
  batch.push_back(api("cudaGraphLaunch", 500, 70'000, 9));
  batch.push_back(kernel("graph_node_a", 500, 80'000, 13));
  batch.push_back(kernel("graph_node_b", 500, 90'000, 13));
  gpu_activity alloc;
  alloc.kind = gpu_activity_kind::memory;  // not written: it goes through the memory collector
  alloc.name = "alloc";
  batch.push_back(alloc);

  gpu_trace_writer writer(1102, base, {h100()}, {{77, 1234}});
  std::string out;
  bool first = true;
  writer.write(batch, out, first);
  const auto events = parse(out);

  const auto kernels = with(events, "cat", "kernel");
  REQUIRE(kernels.size() == 3);
  const auto& k = kernels[0];
  CHECK(k.at("name").as_string() == "my_kernel");
  CHECK(k.at("pid").as_int64() == 0);
  CHECK(k.at("tid").as_int64() == 7);
  CHECK(k.at("ts").as_double() == doctest::Approx(40.0));
  CHECK(k.at("dur").as_double() == doctest::Approx(4.928));
  const auto& args = k.at("args").as_object();
  CHECK(args.at("External id").as_int64() == 112);
  CHECK(args.at("queued").as_int64() == 1000);
  CHECK(args.at("stream").as_int64() == 7);
  CHECK(args.at("correlation").as_int64() == 135071);
  CHECK(args.at("registers per thread").as_int64() == 30);
  CHECK(args.at("blocks per SM").as_double() == doctest::Approx(3.21));
  CHECK(args.at("warps per SM").as_double() == doctest::Approx(12.85));
  CHECK(args.at("est. achieved occupancy %").as_int64() == 20);
  CHECK(args.at("grid").as_array() == boost::json::array{4, 106, 1});
  CHECK(args.at("block").as_array() == boost::json::array{128, 1, 1});

  const auto launches = with(events, "cat", "cuda_runtime");
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].at("pid").as_int64() == 1102);
  CHECK(launches[0].at("tid").as_int64() == 1234);  // CUPTI's thread id mapped to the trace's
  CHECK(launches[0].at("args").at("correlation").as_int64() == 135071);
  CHECK(launches[0].at("args").at("cbid").as_int64() == 211);
  CHECK_FALSE(launches[0].at("args").as_object().contains("stream"));  // host events have no stream

  const auto copies = with(events, "cat", "gpu_memcpy");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].at("args").at("bytes").as_int64() == 256);
  CHECK(copies[0].at("args").at("memory bandwidth (GB/s)").as_double() == doctest::Approx(0.2));

  // One flow per launch: the copy has no launch in the batch, the graph's two kernels share one.
  const auto flows = with(events, "cat", "ac2g");
  REQUIRE(flows.size() == 4);
  CHECK(flows[0].at("ph").as_string() == "s");
  CHECK(flows[0].at("id").as_int64() == 135071);
  CHECK(flows[0].at("tid").as_int64() == 1234);
  CHECK(flows[1].at("ph").as_string() == "f");
  CHECK(flows[1].at("bp").as_string() == "e");
  CHECK(flows[1].at("pid").as_int64() == 0);
  CHECK(flows[1].at("ts").as_double() == doctest::Approx(40.0));
  CHECK(flows[3].at("id").as_int64() == 500);
  CHECK(flows[3].at("tid").as_int64() == 13);

  // GPU 0 named once; streams 7 and 13 named once each.
  CHECK(with(events, "name", "process_name").size() == 1);
  CHECK(with(events, "name", "process_name")[0].at("args").at("name").as_string() == "GPU 0");
  CHECK(with(events, "name", "thread_name").size() == 2);
  for (const auto& e : events) CHECK(e.as_object().at("name").as_string() != "alloc");
}

TEST_CASE("deviceProperties: Kineto's fields, devices in id order") {
  gpu_device_properties second = h100();
  second.id = 1;
  const auto props = boost::json::parse(device_properties_json({second, h100()})).as_array();
  REQUIRE(props.size() == 2);
  CHECK(props[0].at("id").as_int64() == 0);
  CHECK(props[1].at("id").as_int64() == 1);
  for (const char* key : {"name", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
                          "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
                          "sharedMemPerBlock", "sharedMemPerMultiprocessor", "numSms", "sharedMemPerBlockOptin"})
    CHECK_MESSAGE(props[0].as_object().contains(key), key);
  CHECK(props[0].at("numSms").as_int64() == 132);
  CHECK(device_properties_json({}) == "[]");
}
