// proftrace/timeit.hpp — a wall-clock timer for a block or a call
// (torch_geometric.profile.timeit).
//
//   {
//     proftrace::timeit t;                 // prints "Time: 0.01234567s" when the block ends
//     train_epoch();
//   }
//   proftrace::timeit t({.log = false, .avg_time_divisor = 10});
//   for (int i = 0; i < 10; ++i) step();
//   t.stop();
//   double per_step = t.duration();        // seconds / 10
//   t.reset();                             // prints (when log) and starts again
//   auto [loss, seconds] = proftrace::timeit::call(train, model);   // the callable form
//
// In builds with the CUDA collector the timer first waits for the current
// device's work (cudaDeviceSynchronize) before each clock read, so GPU work
// launched in the block is inside the time; without a driver or device it
// times the host only, silently (synchronized() says which). It does not
// depend on a session and keeps timing with PROFTRACE_ENABLED=0: it is a
// user-facing timer, not instrumentation.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

#if PROFTRACE_WITH_CUDA
namespace detail {
// cudaDeviceSynchronize where a device is visible; false (and nothing
// done) without a driver or device. Never throws.
bool synchronize_cuda_for_timing() noexcept;
}  // namespace detail
#endif

struct timeit_options {
  bool log = true;            // print "<label>Time: <seconds>s" at stop() and reset()
  int avg_time_divisor = 0;   // > 1: duration() is the time divided by it (an average per iteration)
  std::string label{};        // printed before "Time: "
  std::ostream* out = nullptr;  // where the log goes; null: standard output
  bool synchronize_cuda = true;  // wait for the device before reading the clock (CUDA builds)
};

template <class R>
struct timed_result {
  R value;
  double seconds;
};
template <>
struct timed_result<void> {
  double seconds;
};

class timeit {
 public:
  explicit timeit(timeit_options options = {}) : options_(std::move(options)) { start(); }
  ~timeit() {
    if (running_) stop();
  }
  timeit(const timeit&) = delete;
  timeit& operator=(const timeit&) = delete;

  // Starts (again) from now.
  void start() {
    synchronize();
    start_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  // Stops, stores the duration and prints it when `log` is set.
  void stop() {
    if (!running_) return;
    synchronize();
    const auto end = std::chrono::steady_clock::now();
    running_ = false;
    seconds_ = std::chrono::duration<double>(end - start_).count();
    if (options_.avg_time_divisor > 1) seconds_ /= options_.avg_time_divisor;
    if (options_.log) print();
  }
  // Prints the duration since the last start (when `log` is set), even
  // after a stop(), as torch_geometric's reset does, and restarts the timer.
  void reset() {
    running_ = true;
    stop();
    start();
  }
  // Seconds (divided by avg_time_divisor when > 1) of the last stop(); while
  // running, the time elapsed so far.
  double duration() const {
    if (!running_) return seconds_;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return options_.avg_time_divisor > 1 ? s / options_.avg_time_divisor : s;
  }
  bool running() const noexcept { return running_; }
  // The last clock read waited for a CUDA device.
  bool synchronized() const noexcept { return synchronized_; }

  // Times one call of fn(args...): its result and the seconds it took
  // (nothing printed unless the options say log).
  template <class Fn, class... Args>
    requires std::invocable<Fn, Args...>
  static auto call(Fn&& fn, Args&&... args) {
    return call(timeit_options{.log = false}, std::forward<Fn>(fn), std::forward<Args>(args)...);
  }
  template <class Fn, class... Args>
    requires std::invocable<Fn, Args...>
  static auto call(timeit_options options, Fn&& fn, Args&&... args) {
    using R = std::invoke_result_t<Fn, Args...>;
    timeit t(std::move(options));
    if constexpr (std::is_void_v<R>) {
      std::invoke(std::forward<Fn>(fn), std::forward<Args>(args)...);
      t.stop();
      return timed_result<void>{t.duration()};
    } else {
      R value = std::invoke(std::forward<Fn>(fn), std::forward<Args>(args)...);
      t.stop();
      return timed_result<R>{std::move(value), t.duration()};
    }
  }

 private:
  void synchronize() {
#if PROFTRACE_WITH_CUDA
    synchronized_ = options_.synchronize_cuda && detail::synchronize_cuda_for_timing();
#endif
  }
  void print() const {
    char text[64];
    std::snprintf(text, sizeof text, "Time: %.8fs\n", seconds_);
    if (options_.out) {
      *options_.out << options_.label << text;
      return;
    }
    // stdout directly: std::cout would need <iostream>, whose static
    // initializer every including translation unit would then carry.
    // (std::cout is synchronised with stdio, so the order is kept.)
    std::fputs(options_.label.c_str(), stdout);
    std::fputs(text, stdout);
  }

  timeit_options options_;
  std::chrono::steady_clock::time_point start_{};
  double seconds_ = 0;
  bool running_ = false;
  bool synchronized_ = false;
};

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
