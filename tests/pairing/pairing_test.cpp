// Pairing under loss and across threads: overflow never invents a scope and
// every lost event is counted once, in events; a scope that ends on another
// thread (a C++20 coroutine resumed on a pool thread, a ucontext fiber moved
// between threads) never touches the other thread's ring and becomes an
// async range; the flusher's own thread never waits for itself under
// `block` (a warning handler that records scopes).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <proftrace/proftrace.hpp>

#include "test_support.hpp"
#include "formats/perfetto/perfetto_reader.hpp"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
constexpr bool under_asan = true;
#else
constexpr bool under_asan = false;
#endif

using test_support::read_trace;
using test_support::temp_dir;

namespace {

// A counter of the trace's "proftrace" object; 0 when the trace has none.
std::int64_t counter(const boost::json::object& trace, const char* key) {
  const auto& p = trace.at("proftrace").as_object();
  return p.contains(key) ? p.at(key).as_int64() : 0;
}

void spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

bool truncated(const boost::json::object& e) {
  const auto& args = e.at("args").as_object();
  return args.contains("truncated") && args.at("truncated").as_bool();
}

// Events of the scopes named in `names`, as written: a complete event holds
// its begin and end (2), a truncated one only its begin (1), each half of an
// async pair one.
std::int64_t written_events(const boost::json::object& trace, std::initializer_list<std::string_view> names) {
  std::int64_t n = 0;
  for (auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (!e.contains("name") || std::find(names.begin(), names.end(), std::string_view(e.at("name").as_string())) == names.end())
      continue;
    const auto ph = e.at("ph").as_string();
    if (ph == "X") n += truncated(e) ? 1 : 2;
    else if (ph == "b" || ph == "e" || ph == "i") n += 1;
  }
  return n;
}

struct complete_event {
  double ts, dur;
};

// Runs `scenario` on its own thread; if it does not finish in time (a
// deadlock), fails and ends the process, which could not go on.
template <class Fn>
void run_with_deadline(const char* what, Fn&& scenario) {
  std::atomic<bool> finished{false};
  std::thread t([&] {
    scenario();
    finished = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(under_tsan || under_asan ? 180 : 60);
  while (!finished && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!finished) {
    FAIL_CHECK("did not finish in time (a deadlock): " << what);
    std::fflush(nullptr);
    std::_Exit(1);
  }
  t.join();
}

}  // namespace

TEST_CASE("overflow never invents a scope: 8 threads, a small ring, nested scopes, every policy") {
  for (const auto policy : {proftrace::overflow_policy::drop, proftrace::overflow_policy::drop_oldest,
                            proftrace::overflow_policy::block}) {
    CAPTURE(proftrace::to_string(policy));
    temp_dir out("invent");
    proftrace::profile p({.overflow = policy, .ring_events = 64, .flush_period = std::chrono::milliseconds(20)});
    constexpr int threads = 8;
    const int iterations = under_tsan ? 3000 : 12000;
    std::mutex longest_mutex;
    std::map<std::int64_t, double> longest_real_us;  // by thread id
    p.start();
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t)
        workers.emplace_back([&] {
          std::int64_t longest = 0;
          for (int i = 0; i < iterations; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            {
              PROF_SCOPE("outer");
              spin_for(std::chrono::nanoseconds(500));
              {
                PROF_SCOPE("inner");
                spin_for(std::chrono::nanoseconds(1000));
              }
              spin_for(std::chrono::nanoseconds(500));
            }
            longest = std::max<std::int64_t>(longest, (std::chrono::steady_clock::now() - t0).count());
          }
          std::lock_guard lock(longest_mutex);
          longest_real_us[static_cast<std::int64_t>(::gettid())] = static_cast<double>(longest) / 1000.0;
        });
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");

    // No complete event is longer than the longest real scope of its thread
    // (measured around it, so it includes the scope's own cost; 1 us for
    // rounding).
    std::map<std::int64_t, std::vector<complete_event>> outers;
    std::int64_t truncated_seen = 0, too_long = 0;
    double longest_written = 0;
    for (auto& v : trace.at("traceEvents").as_array()) {
      const auto& e = v.as_object();
      if (e.at("ph").as_string() != "X") continue;
      const auto name = e.at("name").as_string();
      if (name != "outer" && name != "inner") continue;
      const double dur = e.at("dur").to_number<double>();
      longest_written = std::max(longest_written, dur);
      const double real_us = longest_real_us.at(e.at("tid").as_int64());
      if (dur > real_us + 1.0 + 1e-4 * real_us) ++too_long;  // and 100 ppm for the two clocks' rates
      if (truncated(e)) ++truncated_seen;
      if (name == "outer") outers[e.at("tid").as_int64()].push_back({e.at("ts").to_number<double>(), dur});
    }
    CAPTURE(longest_written);
    CHECK(too_long == 0);
    // No outer contains another outer on its thread.
    std::int64_t nested_outers = 0;
    for (auto& [tid, v] : outers) {
      std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
      for (std::size_t i = 1; i < v.size(); ++i)
        if (v[i - 1].ts + v[i - 1].dur > v[i].ts + 0.002) ++nested_outers;
    }
    CHECK(nested_outers == 0);

    // Every event is written or counted as lost, once.
    const std::int64_t produced = std::int64_t{threads} * iterations * 4;
    const std::int64_t written = written_events(trace, {"outer", "inner"});
    const std::int64_t lost = counter(trace, "lost_events_total");
    CHECK(written + lost == produced);
    CHECK(counter(trace, "truncated_scopes") == truncated_seen);
    CHECK(static_cast<std::int64_t>(p.key_averages().losses.total()) == lost);
    switch (policy) {
      case proftrace::overflow_policy::drop:
        CHECK(counter(trace, "dropped_events") > 0);
        CHECK(counter(trace, "overwritten_events") == 0);
        break;
      case proftrace::overflow_policy::drop_oldest:
        CHECK(counter(trace, "overwritten_events") > 0);
        CHECK(counter(trace, "dropped_events") == 0);
        break;
      case proftrace::overflow_policy::block:
        CHECK(lost == 0);
        CHECK(truncated_seen == 0);
        CHECK(written == produced);
        break;
    }
  }
}

TEST_CASE("drop_oldest counts records, not slots: scopes with shapes span several slots") {
  temp_dir out("shapes");
  proftrace::profile p({.record_shapes = true,
                        .overflow = proftrace::overflow_policy::drop_oldest,
                        .ring_events = 64,
                        .flush_period = std::chrono::milliseconds(200)});
  constexpr int threads = 4;
  const int iterations = under_tsan ? 5000 : 20000;
  p.start();
  {
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        for (int i = 0; i < iterations; ++i) {
          PROF_SCOPE_SHAPES("shaped", {i, 2, 3}, {4, 5, 6}, {7, 8});
        }
      });
  }
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  const std::int64_t produced = std::int64_t{threads} * iterations * 2;
  const std::int64_t overwritten = counter(trace, "overwritten_events");
  CHECK(overwritten > 0);
  CHECK(overwritten < produced);
  CHECK(written_events(trace, {"shaped"}) + counter(trace, "lost_events_total") == produced);
}

TEST_CASE("a free whose allocation was lost is a counted loss, not an unknown free") {
  for (const auto policy : {proftrace::overflow_policy::drop, proftrace::overflow_policy::drop_oldest}) {
    CAPTURE(proftrace::to_string(policy));
    temp_dir out("frees");
    proftrace::profile p({.profile_memory = true,
                          .overflow = policy,
                          .ring_events = 64,
                          .flush_period = std::chrono::milliseconds(1)});
    constexpr int threads = 4;
    const int iterations = under_tsan ? 5000 : 20000;
    p.start();
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          for (int i = 0; i < iterations; ++i) {
            const auto* address = reinterpret_cast<const void*>(std::uintptr_t{0x100000} * (t + 1) + 64 * std::uintptr_t(i));
            PROF_ALLOC(address, 64);
            spin_for(std::chrono::nanoseconds(300));  // the flusher drains between an allocation and its free
            PROF_FREE(address);
            spin_for(std::chrono::nanoseconds(300));
          }
        });
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    const std::int64_t produced = std::int64_t{threads} * iterations * 2;
    CHECK(counter(trace, "lost_events_total") > 0);
    CHECK(counter(trace, "unknown_frees") == 0);
    CHECK(written_events(trace, {"[memory]"}) + counter(trace, "lost_events_total") == produced);
  }
}

namespace {

// One worker thread that resumes the coroutines posted to it.
class resume_pool {
 public:
  resume_pool() : worker_([this] { run(); }) {}
  ~resume_pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  void post(std::coroutine_handle<> h) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(h);
    }
    cv_.notify_one();
  }
  std::thread::id id() const { return worker_.get_id(); }

 private:
  void run() {
    for (int n = 0;; ++n) {
      std::coroutine_handle<> h;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        h = queue_.front();
        queue_.pop_front();
      }
      {
        PROF_SCOPE("worker own");  // the pool thread records too: its ring is its own
      }
      h.resume();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::coroutine_handle<>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

using test_support::detached;

struct resume_on {
  resume_pool& pool;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { pool.post(h); }
  void await_resume() const noexcept {}
};

// Opens a scope on the calling thread; the scope ends on the pool's thread.
detached scope_across_threads(resume_pool& pool, std::atomic<int>& done) {
  {
    PROF_SCOPE("coroutine");
    co_await resume_on{pool};
  }
  done.fetch_add(1, std::memory_order_release);
}

// The same with what a user records in the scope before it leaves the thread.
detached scope_with_args_across_threads(resume_pool& pool, std::atomic<int>& done) {
  {
    PROF_SCOPE_SHAPES("handed over", {8, 8}, {8, 8});
    PROF_ARG("batch", 32);
    PROF_ARG("mode", "train");
    PROF_MATMUL(8, 8, 8);
    co_await resume_on{pool};
  }
  done.fetch_add(1, std::memory_order_release);
}

std::int64_t count_phase(const boost::json::object& trace, std::string_view name, std::string_view ph) {
  std::int64_t n = 0;
  for (auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.contains("name") && e.at("name").as_string() == name && e.at("ph").as_string() == ph) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a scope's token: 0 while nothing began; a begin's index, a dropped begin and the marked bit round-trip") {
  namespace pd = proftrace::detail;
  const std::uint64_t last_index = ((pd::ring_uid_limit - 1) << pd::ring_uid_shift) - 1;  // the last uid's last slot
  for (const std::uint64_t begin : {std::uint64_t{1} << pd::ring_uid_shift, last_index, pd::no_begin}) {
    CAPTURE(begin);
    const pd::scope_token plain = pd::token_of(begin);
    CHECK(plain != 0);
    CHECK((plain & pd::token_marked) == 0);
    CHECK(pd::begin_of(plain) == begin);
    CHECK(pd::begin_of(plain | pd::token_marked) == begin);
  }
}

TEST_CASE("a scope that ends on another thread keeps its args, FLOPs and shapes on its async range, in both formats") {
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("moved-args");
    proftrace::profile p({.record_shapes = true, .with_flops = true, .stream_format = format});
    std::atomic<int> done{0};
    p.start();
    {
      resume_pool pool;
      scope_with_args_across_threads(pool, done);
      while (done.load(std::memory_order_acquire) < 1) std::this_thread::yield();
    }
    p.stop();
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    CHECK(counter(trace, "scopes_ended_on_another_thread") == 1);
    CHECK(counter(trace, "dropped_args") == 0);
    int begins = 0;
    for (const auto& e : test_support::events_named(trace, "handed over")) {
      if (e.at("ph").as_string() != "b") continue;
      ++begins;
      const auto& args = e.at("args").as_object();
      CHECK(args.at("batch").as_int64() == 32);
      CHECK(args.at("mode").as_string() == "train");
      CHECK(args.at("flops").as_int64() == 2 * 8 * 8 * 8);
      CHECK(boost::json::serialize(args.at("Input Dims")) == "[[8,8],[8,8]]");
    }
    CHECK(begins == 1);
    bool row = false;
    for (const auto& r : p.key_averages().rows)
      if (r.key == "handed over") {
        row = true;
        CHECK(r.flops == 2 * 8 * 8 * 8);
      }
    CHECK(row);
  }
}

TEST_CASE("a coroutine's scope that ends on a pool thread: an async range, nothing else lost (block)") {
  temp_dir out("coroutine");
  // block is lossless: every scope of both threads must arrive. A small
  // ring wraps many times, so a push from the wrong thread would show.
  proftrace::profile p({.overflow = proftrace::overflow_policy::block,
                        .ring_events = 256,
                        .flush_period = std::chrono::milliseconds(2)});
  const int coroutines = under_tsan ? 4000 : 40000;
  std::atomic<int> done{0};
  p.start();
  std::int64_t creator_tid = 0;
  run_with_deadline("coroutines under block", [&] {
    resume_pool pool;
    std::jthread creator([&] {
      for (int i = 0; i < coroutines; ++i) {
        scope_across_threads(pool, done);
        PROF_SCOPE("creator own");
      }
    });
    creator.join();
    while (done.load(std::memory_order_acquire) < coroutines) std::this_thread::yield();
  });
  p.stop();
  p.export_chrome_trace(out.path / "t.json");
  const auto trace = read_trace(out.path / "t.json");
  CHECK(counter(trace, "lost_events_total") == 0);
  CHECK(count_phase(trace, "creator own", "X") == coroutines);
  CHECK(count_phase(trace, "coroutine", "X") == 0);
  CHECK(count_phase(trace, "coroutine", "b") == coroutines);
  CHECK(count_phase(trace, "coroutine", "e") == coroutines);
  CHECK(count_phase(trace, "worker own", "X") == coroutines);
  CHECK(counter(trace, "scopes_ended_on_another_thread") == coroutines);
  // Each range begins on the creating thread and ends on the pool's.
  std::map<std::int64_t, std::int64_t> begin_tid, end_tid;
  for (auto& v : trace.at("traceEvents").as_array()) {
    const auto& e = v.as_object();
    if (e.at("name").as_string() != "coroutine") continue;
    const auto id = e.at("id").as_int64();
    (e.at("ph").as_string() == "b" ? begin_tid : end_tid)[id] = e.at("tid").as_int64();
  }
  REQUIRE(begin_tid.size() == static_cast<std::size_t>(coroutines));
  for (auto& [id, tid] : begin_tid) {
    if (creator_tid == 0) creator_tid = tid;
    CHECK(tid == creator_tid);
    CHECK(end_tid.at(id) != tid);
  }
  const auto table = p.key_averages();
  bool found = false;
  for (auto& r : table.rows)
    if (r.key == "coroutine") {
      found = true;
      CHECK(r.count == static_cast<std::uint64_t>(coroutines));
    }
  CHECK(found);
}

namespace {

// A ucontext fiber that opens a scope on one thread and is resumed on
// another, where the scope ends.
struct fiber {
  ucontext_t context{};
  ucontext_t* back = nullptr;  // where the fiber switches to next
  std::vector<char> stack = std::vector<char>(256 * 1024);
#if defined(__SANITIZE_THREAD__)
  void* tsan = nullptr;
  void* back_tsan = nullptr;
#endif
};
fiber* running_fiber = nullptr;  // set before each switch into a fiber

void switch_to(ucontext_t* from, fiber& to) {
#if defined(__SANITIZE_THREAD__)
  to.back_tsan = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(to.tsan, 0);
#endif
  running_fiber = &to;
  REQUIRE(::swapcontext(from, &to.context) == 0);
}

void switch_back(fiber& f) {
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(f.back_tsan, 0);
#endif
  ::swapcontext(&f.context, f.back);
}

void fiber_body() {
  fiber& self = *running_fiber;
  {
    PROF_SCOPE("fiber");
    switch_back(self);  // suspended here; resumed on another thread
  }
  switch_back(self);  // done: never resumed again
}

__attribute__((noinline)) void prepare(fiber& f) {
  if (::getcontext(&f.context) != 0) std::abort();
  f.context.uc_stack.ss_sp = f.stack.data();
  f.context.uc_stack.ss_size = f.stack.size();
  f.context.uc_link = nullptr;
  ::makecontext(&f.context, fiber_body, 0);
#if defined(__SANITIZE_THREAD__)
  f.tsan = __tsan_create_fiber(0);
#endif
}

}  // namespace

TEST_CASE("a fiber moved between threads: its scope ends on the second thread as an async range") {
  // Streamed as Perfetto's format too: its writer may have written the
  // fiber's begin on the first thread's track (a scope the first thread
  // opens after the hand-off does that), and the JSON converted from it
  // holds the scope once, as the async range, as the JSON stream does.
  for (const auto format : {proftrace::trace_format::json, proftrace::trace_format::pftrace}) {
    CAPTURE(static_cast<int>(format));
    temp_dir out("fiber");
    proftrace::profile p({.overflow = proftrace::overflow_policy::block,
                          .ring_events = 64,
                          .flush_period = std::chrono::milliseconds(2),
                          .stream_format = format});
    constexpr int fibers = 300;
    std::vector<fiber> pool(fibers);
    for (auto& f : pool) prepare(f);
    p.start();
    // Each fiber starts on the first thread and opens its scope there...
    std::thread([&] {
      ucontext_t here;
      for (auto& f : pool) {
        f.back = &here;
        switch_to(&here, f);
        PROF_SCOPE("first thread own");
      }
    }).join();
    // ... and finishes on the second, which ends the scope.
    std::thread([&] {
      ucontext_t here;
      for (auto& f : pool) {
        f.back = &here;
        switch_to(&here, f);
        PROF_SCOPE("second thread own");
      }
    }).join();
    p.stop();
#if defined(__SANITIZE_THREAD__)
    for (auto& f : pool) __tsan_destroy_fiber(f.tsan);
#endif
    p.export_chrome_trace(out.path / "t.json");
    const auto trace = read_trace(out.path / "t.json");
    CHECK(counter(trace, "lost_events_total") == 0);
    CHECK(count_phase(trace, "fiber", "X") == 0);
    CHECK(count_phase(trace, "fiber", "b") == fibers);
    CHECK(count_phase(trace, "fiber", "e") == fibers);
    CHECK(count_phase(trace, "first thread own", "X") == fibers);
    CHECK(count_phase(trace, "second thread own", "X") == fibers);
    CHECK(counter(trace, "scopes_ended_on_another_thread") == fibers);
    if (format != proftrace::trace_format::pftrace) continue;
    // The stream itself: each fiber's begin was written on the first
    // thread's track (a scope opened there after the hand-off closed inside
    // it, as pairing saw it); the reader skips those slices, found by their
    // begin, and delivers every scope of the first thread.
    p.export_chrome_trace(out.path / "t.pftrace");
    std::map<std::string, int> slices;
    proftrace::detail::perfetto_callbacks cb;
    cb.on_event = [&](const proftrace::detail::decoded_event& e) {
      if (e.type == proftrace::detail::decoded_event::kind::slice && e.track->is_thread) ++slices[e.name];
      return true;
    };
    const auto r = proftrace::detail::read_perfetto(out.path / "t.pftrace", cb);
    CHECK(r.withdrawn_slices == fibers);
    CHECK(r.unmatched_ends == 0);
    CHECK(slices["fiber"] == 0);
    CHECK(slices["first thread own"] == fibers);
  }
}

TEST_CASE("block, and a warning handler that records scopes on the flusher's thread: no deadlock") {
  std::atomic<bool> handler_on_other_thread{false};
  std::atomic<int> handler_calls{0};
  std::uint64_t lost = 0, in_handler_rows = 0;
  temp_dir spool("handler");
  run_with_deadline("a warning handler recording scopes under block", [&] {
    const auto main_id = std::this_thread::get_id();
    const auto previous = proftrace::set_warning_handler([&](std::string_view) {
      // Only the flusher warns here: the producer never does.
      if (std::this_thread::get_id() != main_id) handler_on_other_thread = true;
      handler_calls.fetch_add(1);
      // Far more than its ring holds: under block this waited for the
      // flusher, which is the thread running it.
      for (int i = 0; i < 5000; ++i) {
        PROF_SCOPE("in handler");
      }
    });
    {
      // The flusher's writes fail past 16 KiB (EFBIG): it warns, on its thread.
      const test_support::file_size_limit limit(16 * 1024);
      proftrace::profile p({.overflow = proftrace::overflow_policy::block,
                            .ring_events = 64,
                            .flush_period = std::chrono::milliseconds(1),
                            .spool_dir = spool.path});
      p.start();
      std::thread producer([&] {
        for (int i = 0; i < 200000; ++i) {
          PROF_SCOPE("producer");
        }
      });
      producer.join();
      try {
        p.stop();
      } catch (const std::exception&) {
        // a trace that could not be written may say so; not what this tests
      }
      lost = p.key_averages().losses.total();
      for (auto& r : p.key_averages().rows)
        if (r.key == "in handler") in_handler_rows += r.count;
    }
    proftrace::set_warning_handler(previous);
  });
  CHECK(handler_calls.load() > 0);
  CHECK(handler_on_other_thread.load());  // the flusher's thread ran it
  MESSAGE("lost events (the handler's, on the flusher's full ring): " << lost << "; its scopes in the table: "
                                                                     << in_handler_rows);
}

TEST_CASE("a scope open across profile::step(): the step annotations close in place, the scope closes whole") {
  temp_dir out("steps");
  std::vector<std::pair<double, double>> outer;  // ts, dur
  std::vector<std::pair<double, double>> steps;
  proftrace::profile p({.schedule = proftrace::schedule({.wait = 0, .warmup = 0, .active = 4, .repeat = 1}),
                        .on_trace_ready = [&](proftrace::session& s) {
                          const auto trace = read_trace(s.trace_path());
                          for (auto& v : trace.at("traceEvents").as_array()) {
                            const auto& e = v.as_object();
                            if (e.at("ph").as_string() != "X") continue;
                            const auto name = e.at("name").as_string();
                            const std::pair<double, double> td{e.at("ts").to_number<double>(), e.at("dur").to_number<double>()};
                            if (name == "across steps") outer.push_back(td);
                            else if (name.starts_with("ProfilerStep#")) steps.push_back(td);
                          }
                        }});
  p.start();
  {
    PROF_SCOPE("across steps");
    spin_for(std::chrono::microseconds(200));
    p.step();
    spin_for(std::chrono::microseconds(200));
    p.step();
    spin_for(std::chrono::microseconds(200));
  }  // ends with step 2's annotation still open above it
  spin_for(std::chrono::microseconds(200));
  p.step();
  p.step();
  p.stop();
  REQUIRE(outer.size() == 1);
  CHECK(outer[0].second >= 600.0);
  REQUIRE(steps.size() >= 3);
  std::sort(steps.begin(), steps.end());
  // Step 2 began inside the scope and went on after it ended.
  CHECK(steps[2].first < outer[0].first + outer[0].second);
  CHECK(steps[2].first + steps[2].second > outer[0].first + outer[0].second + 150.0);
}
