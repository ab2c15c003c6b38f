// proftrace/flops.hpp — FLOP estimators with torch's formulas, usable on their own.
//
//   static_assert(proftrace::flops::mm(64, 256, 128).value == 2 * 64 * 256 * 128);
//   auto c = proftrace::flops::conv({.batch = 8, .in_channels = 3, .out_channels = 64,
//                                    .input = {224, 224}, .kernel = {7, 7}, .stride = {2, 2}, .padding = {3, 3}});
//   if (c.valid) total += c.value;
//
// mm/addmm/bmm/baddbmm and conv2d follow the profiler's with_flops formulas;
// convolutions of every rank, transposed convolutions and backward passes
// follow torch.utils.flop_counter. A zero dimension (an empty batch, an empty
// loop, a region with no work) is valid and counts 0 FLOPs. A negative
// dimension, a convolution that cannot exist (stride, dilation or groups
// below 1, negative padding, channels not divisible by groups, a kernel
// larger than its padded input) or a count that overflows 64 bits gives
// {0, valid = false}: never a crash or a wrapped value.
#pragma once

#include <array>
#include <cstdint>

namespace proftrace::flops {

struct estimate {
  std::int64_t value = 0;
  bool valid = false;
  friend constexpr bool operator==(const estimate&, const estimate&) = default;
};

namespace detail {

inline constexpr estimate invalid{0, false};

// acc *= factor with overflow detection; false for a negative factor or an
// overflow. A zero factor is valid: the product is 0.
constexpr bool mul(std::int64_t& acc, std::int64_t factor) {
  if (factor < 0) return false;
  return !__builtin_mul_overflow(acc, factor, &acc);
}

constexpr estimate product(std::initializer_list<std::int64_t> factors) {
  std::int64_t acc = 1;
  for (std::int64_t f : factors)
    if (!mul(acc, f)) return invalid;
  return {acc, true};
}

}  // namespace detail

// 2·M·K·N for (M×K) @ (K×N).
constexpr estimate mm(std::int64_t m, std::int64_t n, std::int64_t k) { return detail::product({2, m, k, n}); }
// addmm ignores the bias, as torch does.
constexpr estimate addmm(std::int64_t m, std::int64_t n, std::int64_t k) { return mm(m, n, k); }
// 2·B·M·K·N for B batched (M×K) @ (K×N).
constexpr estimate bmm(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k) { return detail::product({2, b, m, k, n}); }
constexpr estimate baddbmm(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k) { return bmm(b, m, n, k); }
// add, mul and other elementwise ops: the number of elements of the first input.
constexpr estimate elementwise(std::int64_t numel) { return numel >= 0 ? estimate{numel, true} : detail::invalid; }

// A convolution of 1 to 3 spatial dimensions (dims = number of entries used
// in the arrays). For a transposed convolution, in_channels/out_channels are
// the convolution's own (input, output) channels.
struct conv_params {
  std::int64_t batch = 1;
  std::int64_t in_channels = 1;
  std::int64_t out_channels = 1;
  std::array<std::int64_t, 3> input{1, 1, 1};
  std::array<std::int64_t, 3> kernel{1, 1, 1};
  std::array<std::int64_t, 3> stride{1, 1, 1};
  std::array<std::int64_t, 3> padding{0, 0, 0};
  std::array<std::int64_t, 3> dilation{1, 1, 1};
  std::array<std::int64_t, 3> output_padding{0, 0, 0};  // transposed only
  std::int64_t groups = 1;
  int dims = 2;
  bool transposed = false;
};

// Output size along dimension i; below 1 means the shape is invalid.
constexpr std::int64_t conv_output_size(const conv_params& p, int i) {
  const auto in = p.input[static_cast<std::size_t>(i)], k = p.kernel[static_cast<std::size_t>(i)];
  const auto s = p.stride[static_cast<std::size_t>(i)], pad = p.padding[static_cast<std::size_t>(i)];
  const auto d = p.dilation[static_cast<std::size_t>(i)];
  if (p.transposed) return (in - 1) * s - 2 * pad + d * (k - 1) + p.output_padding[static_cast<std::size_t>(i)] + 1;
  if (s <= 0) return 0;
  const std::int64_t span = in + 2 * pad - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

namespace detail {

// A convolution with a zero dimension (batch, channels, an input or kernel
// extent) does no work: valid, 0 FLOPs.
constexpr bool conv_is_empty(const conv_params& p) {
  if (p.batch == 0 || p.in_channels == 0 || p.out_channels == 0) return true;
  for (int i = 0; i < p.dims; ++i)
    if (p.input[static_cast<std::size_t>(i)] == 0 || p.kernel[static_cast<std::size_t>(i)] == 0) return true;
  return false;
}

// Whether a convolution can exist: no negative dimension, stride, dilation
// and groups at least 1, padding not negative, channels divisible by groups,
// and (when no dimension is zero) an output of at least 1 along each axis.
constexpr bool conv_shape_ok(const conv_params& p) {
  if (p.dims < 1 || p.dims > 3 || p.batch < 0 || p.in_channels < 0 || p.out_channels < 0 || p.groups <= 0) return false;
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0) return false;
  for (int i = 0; i < p.dims; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (p.input[u] < 0 || p.kernel[u] < 0 || p.stride[u] <= 0 || p.dilation[u] <= 0 || p.padding[u] < 0) return false;
  }
  if (conv_is_empty(p)) return true;
  for (int i = 0; i < p.dims; ++i)
    if (conv_output_size(p, i) < 1) return false;
  return true;
}

// flop_counter's conv_flop_count: 2 · prod(spatial) · prod(filter) · batch · w0 · w1.
constexpr estimate conv_count(std::int64_t batch, std::int64_t w0, std::int64_t w1, const std::int64_t* spatial,
                              const std::int64_t* filter, int dims) {
  std::int64_t acc = 2;
  if (!mul(acc, batch) || !mul(acc, w0) || !mul(acc, w1)) return invalid;
  for (int i = 0; i < dims; ++i)
    if (!mul(acc, spatial[i]) || !mul(acc, filter[i])) return invalid;
  return {acc, true};
}

struct conv_shapes {
  std::array<std::int64_t, 3> in{}, out{}, k{};
};

constexpr conv_shapes shapes_of(const conv_params& p) {
  conv_shapes s;
  for (int i = 0; i < p.dims; ++i) {
    const auto u = static_cast<std::size_t>(i);
    s.in[u] = p.input[u];
    s.out[u] = conv_output_size(p, i);
    s.k[u] = p.kernel[u];
  }
  return s;
}

}  // namespace detail

// Forward convolution (torch.utils.flop_counter): 2·prod(out spatial)·prod(kernel)·N·Cout·(Cin/groups);
// transposed: input spatial instead of output, and weight (Cin, Cout/groups).
constexpr estimate conv(const conv_params& p) {
  if (!detail::conv_shape_ok(p)) return detail::invalid;
  if (detail::conv_is_empty(p)) return {0, true};
  const auto s = detail::shapes_of(p);
  if (p.transposed)
    return detail::conv_count(p.batch, p.in_channels, p.out_channels / p.groups, s.in.data(), s.k.data(), p.dims);
  return detail::conv_count(p.batch, p.out_channels, p.in_channels / p.groups, s.out.data(), s.k.data(), p.dims);
}

// The profiler's with_flops formula for conv2d: 2·N·Ho·Wo·kh·kw·Cin·Cout/groups.
constexpr estimate conv2d(std::int64_t n, std::int64_t c_in, std::int64_t c_out, std::int64_t h, std::int64_t w,
                          std::int64_t kh, std::int64_t kw, std::int64_t stride = 1, std::int64_t padding = 0,
                          std::int64_t dilation = 1, std::int64_t groups = 1) {
  return conv({.batch = n, .in_channels = c_in, .out_channels = c_out, .input = {h, w, 1}, .kernel = {kh, kw, 1},
               .stride = {stride, stride, 1}, .padding = {padding, padding, 0}, .dilation = {dilation, dilation, 1},
               .groups = groups, .dims = 2});
}

// Backward of a convolution (flop_counter's conv_backward_flop): grad_input
// is the transposed count, grad_weight the count on swapped operands.
constexpr estimate conv_backward(const conv_params& p, bool grad_input = true, bool grad_weight = true) {
  if (!detail::conv_shape_ok(p)) return detail::invalid;
  if (detail::conv_is_empty(p)) return {0, true};
  const auto s = detail::shapes_of(p);
  std::int64_t total = 0;
  if (grad_input) {
    const estimate gi = p.transposed
                            ? detail::conv_count(p.batch, p.in_channels, p.out_channels / p.groups, s.in.data(), s.k.data(), p.dims)
                            : detail::conv_count(p.batch, p.out_channels, p.in_channels / p.groups, s.out.data(), s.k.data(), p.dims);
    if (!gi.valid || __builtin_add_overflow(total, gi.value, &total)) return detail::invalid;
  }
  if (grad_weight) {
    // Batch and channels swap places: the "batch" is a channel count and the
    // spatial extent is the kernel's; the filter is the activation's extent.
    const estimate gw = p.transposed
                            ? detail::conv_count(p.out_channels, p.in_channels, p.batch, s.k.data(), s.in.data(), p.dims)
                            : detail::conv_count(p.in_channels, p.out_channels, p.batch, s.k.data(), s.out.data(), p.dims);
    if (!gw.valid || __builtin_add_overflow(total, gw.value, &total)) return detail::invalid;
  }
  return {total, true};
}

}  // namespace proftrace::flops
