#include "thread_counters.hpp"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "recording/level_stack.hpp"
#include "proftrace/detail/recorder.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

// The session's selection. A thread copies it when `generation` moved; the
// generation is read again after the copy, so a copy torn by a concurrent
// start() is taken again.
std::atomic<std::uint64_t> generation{1};
std::atomic<std::uint32_t> session_count{0};
std::atomic<std::uint8_t> session_kinds[max_session_counters];

// Levels kept in place; deeper ones are grown on demand (level_stack).
constexpr std::uint32_t levels_in_place = 64;
using counter_values = std::uint64_t[max_session_counters];

struct thread_counters {
  std::uint64_t generation = 0;
  std::uint32_t n = 0;
  std::uint32_t depth = 0;
  bool exiting = false;
  std::uint8_t kind[max_session_counters];
  int fd[max_session_counters];
  // The counter's user page where it is a PMU counter rdpmc may read; null otherwise.
  const perf_event_mmap_page* page[max_session_counters];
  // The counters' values at each open counted scope's begin, by level.
  level_stack<counter_values, levels_in_place> at;
};
// Trivially destructible, so that a scope in another thread_local's
// destructor still finds it; `closer` closes the files at thread exit.
constinit thread_local thread_counters this_thread_counters{};

void close_all(thread_counters& t) noexcept {
  for (std::uint32_t i = 0; i < t.n; ++i) {
    if (t.page[i]) munmap(const_cast<perf_event_mmap_page*>(t.page[i]), static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
    if (t.fd[i] >= 0) close(t.fd[i]);
  }
  t.n = 0;
  t.depth = 0;
}

struct closer {
  ~closer() {
    close_all(this_thread_counters);
    this_thread_counters.at.release();
    this_thread_counters.exiting = true;
  }
};
thread_local closer this_thread_closer;

long perf_event_open(perf_event_attr* attr, int group) noexcept {
  return syscall(SYS_perf_event_open, attr, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

bool is_pmu(std::uint32_t type) noexcept {
  return type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE || type == PERF_TYPE_RAW;
}

#if defined(__x86_64__) || defined(__i386__)
// The counter through rdpmc, as perf_event_open(2) describes the user page:
// its offset plus the PMU register, sign-extended from pmc_width bits, under
// the page's sequence lock. False when rdpmc may not be used now (the
// kernel withdrew it, or the counter is not on the PMU at this moment).
bool read_user_page(const perf_event_mmap_page* pc, std::uint64_t& out) noexcept {
  const volatile perf_event_mmap_page* p = pc;
  std::uint32_t seq;
  std::uint64_t count;
  do {
    seq = p->lock;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const std::uint32_t index = p->index;
    if (!p->cap_user_rdpmc || index == 0) return false;
    count = static_cast<std::uint64_t>(p->offset);
    const std::uint16_t width = p->pmc_width;
    std::uint32_t lo, hi;
    __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index - 1));
    std::uint64_t pmc = (std::uint64_t{hi} << 32) | lo;
    if (width > 0 && width < 64) {
      pmc <<= 64 - width;
      pmc = static_cast<std::uint64_t>(static_cast<std::int64_t>(pmc) >> (64 - width));
    }
    count += pmc;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } while (p->lock != seq);
  out = count;
  return true;
}
#else
bool read_user_page(const perf_event_mmap_page*, std::uint64_t&) noexcept { return false; }
#endif

std::uint64_t read_counter(const thread_counters& t, std::uint32_t i) noexcept {
  std::uint64_t v = 0;
  if (t.page[i] && read_user_page(t.page[i], v)) return v;
  if (read(t.fd[i], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
  return v;
}

void read_all(const thread_counters& t, std::uint64_t* out) noexcept {
  for (std::uint32_t i = 0; i < t.n; ++i) out[i] = read_counter(t, i);
}

// Opens this thread's copies of the session's counters; a kind that fails
// here (it opened on the session's thread) is left out for this thread.
// Each counter is its own event, read on its own, not a group read in one
// call: in a group led by task-clock, context-switches read 0 here (Linux
// 6.18 in a KVM guest), and a group mixing PMU and software counters is
// scheduled as one.
void reopen(thread_counters& t, std::uint64_t g) noexcept {
  close_all(t);
  t.generation = g;
  if (t.exiting) return;
  (void)&this_thread_closer;  // registers the thread-exit close
  std::uint8_t kinds[max_session_counters];
  std::uint32_t n;
  for (;;) {
    n = std::min<std::uint32_t>(session_count.load(std::memory_order_acquire), max_session_counters);
    for (std::uint32_t i = 0; i < n; ++i) kinds[i] = session_kinds[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (generation.load(std::memory_order_relaxed) == g) break;
    g = generation.load(std::memory_order_acquire);
    t.generation = g;
  }
  std::string why;
  for (std::uint32_t i = 0; i < n; ++i) {
    const int fd = open_counter(kinds[i], why);
    if (fd < 0) continue;
    t.kind[t.n] = kinds[i];
    t.fd[t.n] = fd;
    t.page[t.n] = nullptr;
    if (is_pmu(counter_kinds()[kinds[i]].type)) {
      void* p = mmap(nullptr, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        const auto* page = static_cast<const perf_event_mmap_page*>(p);
        if (page->cap_user_rdpmc) t.page[t.n] = page;
        else munmap(p, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
      }
    }
    ++t.n;
  }
}

}  // namespace

int open_counter(std::size_t kind, std::string& why) noexcept {
  const auto kinds = counter_kinds();
  if (kind >= kinds.size()) {
    why = "unknown counter";
    return -1;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = kinds[kind].type;
  attr.config = kinds[kind].config;
  attr.exclude_hv = 1;
  long fd = perf_event_open(&attr, -1);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    // perf_event_paranoid >= 2 without CAP_PERFMON: user space only.
    attr.exclude_kernel = 1;
    fd = perf_event_open(&attr, -1);
  }
  if (fd < 0) {
    const int e = errno;
    why = e == ENOENT || e == EOPNOTSUPP ? "not exposed by this machine"
          : e == EACCES || e == EPERM    ? "not permitted (perf_event_paranoid, or a container's seccomp)"
          : e == ENOSYS                  ? "no perf_event_open in this kernel"
                                         : "cannot be opened";
    why += " (";
    why += std::strerror(e);
    why += ")";
    return -1;
  }
  return static_cast<int>(fd);
}

void set_session_counters(std::span<const std::uint8_t> kinds) noexcept {
  const std::size_t n = std::min(kinds.size(), max_session_counters);
  for (std::size_t i = 0; i < n; ++i) session_kinds[i].store(kinds[i], std::memory_order_relaxed);
  session_count.store(static_cast<std::uint32_t>(n), std::memory_order_release);
  generation.fetch_add(1, std::memory_order_acq_rel);
}

std::uint32_t counters_enter() noexcept {
  // The thread's ring first: attaching it (a fresh ring's pages touched)
  // between this read and the begin's would count against the scope. Only
  // PROF_SCOPE's guard finds the ring before it opens its marks.
  (void)thread_ring();
  thread_counters& t = this_thread_counters;
  const std::uint64_t g = generation.load(std::memory_order_acquire);
  if (PROFTRACE_UNLIKELY(t.generation != g)) reopen(t, g);
  if (t.n == 0) return no_counters;
  counter_values* at = t.at.slot(t.depth);
  if (!at) return no_counters;  // out of memory: this scope and its children count into their parent
  read_all(t, *at);
  return t.depth++;
}

void counters_leave(std::uint32_t level, bool recorded) noexcept {
  thread_counters& t = this_thread_counters;
  if (level >= t.depth) return;  // entered before the thread's counters were (re)opened
  if (!recorded) {
    t.depth = level;
    return;
  }
  std::uint64_t now[max_session_counters];
  read_all(t, now);
  for (std::uint32_t i = 0; i < t.n; ++i)
    record_arg_integer(counter_key_site(t.kind[i]), static_cast<std::int64_t>(now[i] - (*t.at.slot(level))[i]));
  t.depth = level;
}

}  // namespace proftrace::detail
