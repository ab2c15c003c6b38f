// FLOP estimators against torch's formulas. Expected values were computed
// with the formulas of torch/profiler (mm, addmm, bmm, baddbmm, conv2d) and
// torch/utils/flop_counter.py (conv_flop_count, conv_backward_flop),
// re-implemented in Python from those sources.
#include <doctest/doctest.h>

#include <proftrace/flops.hpp>

#include <limits>
#include <map>

namespace fl = proftrace::flops;

namespace {

struct conv_case {
  const char* name;
  fl::conv_params p;
  std::int64_t forward, backward_both, backward_input, backward_weight;
};

// (N, Cin, Cout, input, kernel, stride, padding, dilation, groups, dims, transposed)
fl::conv_params P(std::int64_t n, std::int64_t cin, std::int64_t cout, std::array<std::int64_t, 3> in,
                  std::array<std::int64_t, 3> k, std::array<std::int64_t, 3> s, std::array<std::int64_t, 3> pad,
                  std::array<std::int64_t, 3> d, std::int64_t g, int dims, bool transposed) {
  return {.batch = n, .in_channels = cin, .out_channels = cout, .input = in, .kernel = k, .stride = s, .padding = pad,
          .dilation = d, .groups = g, .dims = dims, .transposed = transposed};
}

const conv_case conv_cases[] = {
    {"conv2d basic", P(1, 3, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false), 388800, 777600, 388800, 388800},
    {"conv2d stride pad", P(8, 3, 64, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 1, 2, false), 1888223232, 3776446464,
     1888223232, 1888223232},
    {"conv2d dilation", P(2, 16, 32, {64, 64}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, 2, false), 75497472, 150994944, 75497472,
     75497472},
    {"conv2d groups", P(4, 32, 64, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 2, false), 28901376, 144506880, 28901376,
     115605504},
    {"conv2d depthwise", P(4, 32, 32, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 32, 2, false), 1806336, 59609088, 1806336,
     57802752},
    {"conv2d rectangular", P(1, 4, 6, {10, 20}, {3, 5}, {2, 1}, {1, 2}, {1, 1}, 2, 2, false), 36000, 108000, 36000, 72000},
    {"conv1d", P(16, 64, 128, {1000}, {5}, {1}, {2}, {1}, 1, 1, false), 1310720000, 2621440000, 1310720000, 1310720000},
    {"conv1d stride dilation", P(3, 8, 8, {100}, {3}, {3}, {0}, {2}, 1, 1, false), 36864, 73728, 36864, 36864},
    {"conv3d", P(2, 4, 8, {16, 32, 32}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 3, false), 56623104, 113246208,
     56623104, 56623104},
    {"conv3d strided groups", P(1, 8, 16, {8, 16, 16}, {3, 3, 3}, {2, 2, 2}, {0, 1, 1}, {1, 1, 1}, 2, 3, false), 663552,
     1990656, 663552, 1327104},
    {"conv_transpose2d", P(2, 16, 8, {16, 16}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, 2, true), 2097152, 4194304, 2097152,
     2097152},
    {"conv_transpose1d groups", P(4, 8, 12, {50}, {3}, {2}, {1}, {1}, 4, 1, true), 28800, 144000, 28800, 115200},
    {"conv_transpose3d", P(1, 4, 2, {4, 8, 8}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, 1, 3, true), 32768, 65536, 32768,
     32768},
};

}  // namespace

TEST_CASE("matmul family: 2·M·K·N and 2·B·M·K·N, bias ignored") {
  CHECK(fl::mm(64, 256, 128) == fl::estimate{2 * 64 * 256 * 128, true});
  CHECK(fl::mm(1, 1, 1) == fl::estimate{2, true});
  CHECK(fl::addmm(64, 256, 128) == fl::mm(64, 256, 128));
  CHECK(fl::mm(3, 5, 7) == fl::estimate{210, true});
  CHECK(fl::bmm(8, 64, 256, 128) == fl::estimate{8LL * 2 * 64 * 256 * 128, true});
  CHECK(fl::baddbmm(8, 64, 256, 128) == fl::bmm(8, 64, 256, 128));
  CHECK(fl::bmm(1, 3, 5, 7) == fl::mm(3, 5, 7));
  CHECK(fl::elementwise(1000) == fl::estimate{1000, true});
  static_assert(fl::mm(2, 3, 4).value == 48);  // usable at compile time
}

TEST_CASE("convolutions of every rank, transposed, forward and backward") {
  for (const auto& c : conv_cases) {
    CAPTURE(c.name);
    CHECK(fl::conv(c.p) == fl::estimate{c.forward, true});
    CHECK(fl::conv_backward(c.p) == fl::estimate{c.backward_both, true});
    CHECK(fl::conv_backward(c.p, true, false) == fl::estimate{c.backward_input, true});
    CHECK(fl::conv_backward(c.p, false, true) == fl::estimate{c.backward_weight, true});
  }
  // The profiler's with_flops conv2d formula: 2·N·Ho·Wo·kh·kw·Cin·Cout/groups.
  CHECK(fl::conv2d(8, 3, 64, 224, 224, 7, 7, 2, 3) == fl::estimate{1888223232, true});
  CHECK(fl::conv2d(4, 32, 64, 28, 28, 3, 3, 1, 1, 1, 4) == fl::estimate{2LL * 4 * 28 * 28 * 3 * 3 * 32 * 64 / 4, true});
  CHECK(fl::conv2d(2, 16, 32, 64, 64, 3, 3, 1, 2, 2) == fl::estimate{75497472, true});
  CHECK(fl::conv_output_size(P(1, 1, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 1, 2, false), 0) == 112);
  CHECK(fl::conv_output_size(P(1, 1, 1, {16, 16}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, 2, true), 0) == 32);
}

TEST_CASE("zero dimensions are valid and count 0 FLOPs: an empty loop does no work") {
  const fl::estimate zero{0, true};
  CHECK(fl::mm(0, 4, 4) == zero);
  CHECK(fl::mm(4, 0, 4) == zero);
  CHECK(fl::mm(4, 4, 0) == zero);
  CHECK(fl::addmm(0, 0, 0) == zero);
  CHECK(fl::bmm(0, 4, 4, 4) == zero);
  CHECK(fl::baddbmm(2, 4, 0, 4) == zero);
  CHECK(fl::elementwise(0) == zero);
  static_assert(fl::mm(0, 1 << 30, 1 << 30) == fl::estimate{0, true});
  // A zero factor anywhere makes a product that would overflow valid: 0.
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max() / 4;
  CHECK(fl::mm(big, big, 0) == zero);
  // Convolutions with an empty batch, no channels, an empty input or kernel.
  auto p = P(0, 4, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);
  CHECK(fl::conv(p) == zero);
  CHECK(fl::conv_backward(p) == zero);
  p = P(2, 0, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);
  CHECK(fl::conv(p) == zero);
  p = P(2, 4, 0, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, 2, false);
  CHECK(fl::conv(p) == zero);
  p = P(2, 4, 8, {0, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);  // kernel larger than the empty input: still no work
  CHECK(fl::conv(p) == zero);
  CHECK(fl::conv_backward(p, true, false) == zero);
  p = P(2, 4, 8, {5}, {0}, {1}, {0}, {1}, 1, 1, true);
  CHECK(fl::conv(p) == zero);
  CHECK(fl::conv2d(0, 3, 64, 224, 224, 7, 7, 2, 3) == zero);
  // An empty convolution must still be one that can exist.
  p = P(0, 3, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, 2, false);  // 3 channels in 2 groups
  CHECK(fl::conv(p) == fl::estimate{0, false});
  p = P(0, 4, 8, {32, 32}, {3, 3}, {0, 1}, {0, 0}, {1, 1}, 1, 2, false);  // stride 0
  CHECK(fl::conv(p) == fl::estimate{0, false});
}

TEST_CASE("invalid shapes count 0 and say so; overflow never wraps") {
  const fl::estimate invalid{0, false};
  CHECK(fl::mm(-1, 4, 4) == invalid);
  CHECK(fl::mm(4, -1, 4) == invalid);
  CHECK(fl::mm(0, -1, 4) == invalid);  // a zero does not hide a negative dimension
  CHECK(fl::bmm(-3, 4, 4, 4) == invalid);
  CHECK(fl::elementwise(-1) == invalid);
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max() / 4;
  CHECK(fl::mm(big, big, 2) == invalid);            // overflows 64 bits
  CHECK(fl::bmm(1 << 20, 1 << 20, 1 << 20, 8) == invalid);
  auto p = P(1, 3, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);
  p.kernel = {40, 40, 1};  // output size below 1
  CHECK(fl::conv(p) == invalid);
  CHECK(fl::conv_backward(p) == invalid);
  p = P(1, 3, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, 2, false);  // 3 channels in 2 groups
  CHECK(fl::conv(p) == invalid);
  p = P(1, 4, 8, {32, 32}, {3, 3}, {0, 1}, {0, 0}, {1, 1}, 1, 2, false);  // stride 0
  CHECK(fl::conv(p) == invalid);
  p = P(1, 4, 8, {32, 32}, {3, 3}, {1, 1}, {-1, 0}, {1, 1}, 1, 2, false);  // negative padding
  CHECK(fl::conv(p) == invalid);
  p = P(1, 4, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 4, false);  // four spatial dims
  CHECK(fl::conv(p) == invalid);
  p = P(-1, 4, 8, {32, 32}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);  // negative batch
  CHECK(fl::conv(p) == invalid);
  p = P(1, 4, 8, {32, -2}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);  // negative input extent
  CHECK(fl::conv(p) == invalid);
  p = P(0, 4, 8, {32, 32}, {-3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 2, false);  // negative kernel, empty batch
  CHECK(fl::conv(p) == invalid);
  CHECK(fl::conv2d(1 << 30, 1 << 20, 1 << 20, 1024, 1024, 3, 3) == invalid);  // overflow
}

// ---- the collector: estimates attached to scopes in a session ----

#include <proftrace/proftrace.hpp>

#include "test_support.hpp"

TEST_CASE("with_flops: estimates attach to the enclosing scope, in the trace and the table") {
  test_support::temp_dir out("flops");
  proftrace::profile p({.with_flops = true});
  p.start();
  for (int i = 0; i < 2; ++i) {
    PROF_SCOPE("gemm");
    PROF_MATMUL(64, 256, 128);
    {
      PROF_SCOPE("epilogue");
      PROF_ELEMENTWISE(64 * 256);
    }
  }
  {
    PROF_FLOPS_SCOPE("conv", (proftrace::flops::conv({.batch = 8, .in_channels = 3, .out_channels = 64,
                                                      .input = {224, 224}, .kernel = {7, 7}, .stride = {2, 2},
                                                      .padding = {3, 3}})));
  }
  {
    PROF_SCOPE("bad");
    PROF_MATMUL(-1, 4, 4);  // invalid: counted, not added
  }
  {
    PROF_SCOPE("empty");
    PROF_MATMUL(0, 4, 4);  // no work: valid, adds 0, not counted as invalid
  }
  PROF_MATMUL(2, 2, 2);  // no scope open: counted
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  std::map<std::string, std::int64_t> flops;
  for (auto& r : p.key_averages().rows) flops[r.key] = r.flops;
  CHECK(flops["gemm"] == 2 * 2 * 64 * 256 * 128);  // two calls
  CHECK(flops["epilogue"] == 2 * 64 * 256);
  CHECK(flops["conv"] == 1888223232);
  CHECK(flops["bad"] == 0);
  CHECK(flops["empty"] == 0);

  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("with_flops").as_int64() == 1);
  const auto gemm = test_support::events_named(trace, "gemm");
  REQUIRE(gemm.size() == 2);
  CHECK(gemm[0].at("args").at("flops").as_int64() == 2 * 64 * 256 * 128);
  const auto conv = test_support::events_named(trace, "conv");
  REQUIRE(conv.size() == 1);
  CHECK(conv[0].at("cat").as_string() == "cpu_op");
  CHECK(conv[0].at("args").at("flops").as_int64() == 1888223232);
  CHECK_FALSE(test_support::events_named(trace, "bad")[0].at("args").as_object().contains("flops"));
  CHECK(trace.at("proftrace").at("invalid_flop_estimates").as_int64() == 1);
  CHECK(trace.at("proftrace").at("unscoped_flop_estimates").as_int64() == 1);

  const std::string table = p.key_averages().table();
  CHECK(table.find("Total KFLOPs") != std::string::npos);  // smallest positive count: 32768
}

TEST_CASE("PROF_FLOPS takes a raw count of any integer type, an estimate, or braces with commas") {
  test_support::temp_dir out("flops_raw");
  proftrace::profile p({.with_flops = true});
  p.start();
  const std::int64_t n = 1000;
  {
    PROF_SCOPE("raw");
    PROF_FLOPS(n);                                   // std::int64_t
    PROF_FLOPS(7);                                   // int
    PROF_FLOPS(std::size_t{8});                      // unsigned
    PROF_FLOPS(short{9});
    PROF_FLOPS(static_cast<unsigned char>(10));
    PROF_FLOPS(11LL);
    PROF_FLOPS(12u);
    PROF_FLOPS(0);                                   // no work: valid, adds 0
  }
  {
    PROF_SCOPE("estimates");
    PROF_FLOPS(proftrace::flops::estimate{n, true});  // braces with a comma: no extra parentheses
    PROF_FLOPS({n, true});                            // the braced form alone
    PROF_FLOPS(proftrace::flops::mm(2, 2, 2));        // 16
    PROF_FLOPS(proftrace::flops::estimate{5, false}); // invalid: counted
  }
  {
    PROF_SCOPE("invalid");
    PROF_FLOPS(-1);                                   // negative raw count: invalid, counted
    PROF_FLOPS(std::numeric_limits<std::uint64_t>::max());  // above 64 signed bits: invalid, counted
    PROF_FLOPS(proftrace::flops::estimate{-4, true}); // a negative "valid" estimate is invalid too
  }
  {
    PROF_FLOPS_SCOPE("scope raw", n);
  }
  {
    PROF_FLOPS_SCOPE("scope braced", proftrace::flops::estimate{n, true});
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");

  std::map<std::string, std::int64_t> flops;
  for (auto& r : p.key_averages().rows) flops[r.key] = r.flops;
  CHECK(flops["raw"] == 1000 + 7 + 8 + 9 + 10 + 11 + 12);
  CHECK(flops["estimates"] == 2000 + 16);
  CHECK(flops["invalid"] == 0);
  CHECK(flops["scope raw"] == 1000);
  CHECK(flops["scope braced"] == 1000);
  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").at("invalid_flop_estimates").as_int64() == 4);
  CHECK(trace.at("proftrace").at("unscoped_flop_estimates").as_int64() == 0);
}

TEST_CASE("sums past 64 bits: a scope's is an invalid estimate, counted; a row's and the total saturate") {
  test_support::temp_dir out("flops_sums");
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  proftrace::profile p({.with_flops = true});
  p.start();
  {
    PROF_SCOPE("one scope");
    PROF_FLOPS(max);
    PROF_FLOPS(max);  // the scope's sum would pass 64 bits: adds nothing, counted
    PROF_FLOPS(0);
  }
  for (int i = 0; i < 2; ++i) {
    PROF_SCOPE("two scopes");
    PROF_FLOPS(max / 2 + 10);  // each valid; their row's sum saturates
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  std::map<std::string, std::int64_t> flops;
  const auto averages = p.key_averages();
  for (auto& r : averages.rows) flops[r.key] = r.flops;
  CHECK(flops["one scope"] == max);
  CHECK(flops["two scopes"] == max);
  CHECK(averages.total_average().flops == max);
  const auto trace = test_support::read_trace(out.path / "t.json");
  CHECK(trace.at("proftrace").at("invalid_flop_estimates").as_int64() == 1);
  for (const auto& e : trace.at("traceEvents").as_array())
    if (e.as_object().contains("name") && e.at("name").as_string() == "one scope") CHECK(e.at("args").at("flops").as_int64() == max);
}

TEST_CASE("raw counts convert exactly: zero valid, negative and 64-bit overflow invalid") {
  using proftrace::detail::raw_flop_count;
  static_assert(raw_flop_count(0) == fl::estimate{0, true});
  static_assert(raw_flop_count(42u) == fl::estimate{42, true});
  static_assert(raw_flop_count(-1) == fl::estimate{0, false});
  static_assert(raw_flop_count(std::numeric_limits<std::int64_t>::max()) ==
                fl::estimate{std::numeric_limits<std::int64_t>::max(), true});
  static_assert(raw_flop_count(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) ==
                fl::estimate{0, false});
  static_assert(proftrace::detail::is_raw_flop_count<long>);
  static_assert(!proftrace::detail::is_raw_flop_count<bool>);
  static_assert(!proftrace::detail::is_raw_flop_count<double>);
  static_assert(proftrace::detail::flop_estimate_like<fl::estimate>);
  static_assert(!proftrace::detail::flop_estimate_like<double>);
}

TEST_CASE("without with_flops nothing is estimated, and the arguments are not evaluated") {
  int evaluated = 0;
  const auto dim = [&](std::int64_t v) {
    ++evaluated;
    return v;
  };
  proftrace::profile p;
  p.start();
  {
    PROF_SCOPE("gemm");
    PROF_MATMUL(dim(4), dim(4), dim(4));
  }
  p.stop();
  CHECK(evaluated == 0);
  for (auto& r : p.key_averages().rows) CHECK(r.flops == 0);
}
