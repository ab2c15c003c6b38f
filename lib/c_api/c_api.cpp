// The C API (<proftrace/proftrace.h>) and sessions from the environment
// (PROFTRACE_CONFIG): one parser for the "key=value,..." string both take,
// one session slot they share, and the C scopes' per-thread nesting.
#include "proftrace/proftrace.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "c_config.hpp"
#include "recording/environment_session.hpp"
#include "recording/interned_names.hpp"
#include "recording/registry.hpp"
#include "proftrace/distributed.hpp"
#include "proftrace/detail/recorder.hpp"
#include "proftrace/flops.hpp"
#include "proftrace/profile.hpp"
#include "proftrace/schedule.hpp"
#include "session/tensorboard_handler.hpp"
#include "helpers/warn.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

// The session proftrace_start or PROFTRACE_CONFIG started.
struct c_session {
  std::unique_ptr<profile> p;
  bool table = false;
  bool across_ranks = false;  // `ranks`: the table printed is the job's
  bool from_environment = false;
  pid_t owner = ::getpid();  // a forked child inherits the slot, not the session
};
// Recursive: session::start() calls yield_environment_session on the thread
// that may hold it (proftrace_start).
std::recursive_mutex c_session_mutex;
c_session* current = nullptr;  // under c_session_mutex

thread_local std::string last_error;

std::atomic<std::uint64_t> unmatched_pops{0};
std::atomic<std::uint64_t> too_deep_pushes{0};  // recording, past max_c_depth: not recorded

// The calling thread's C scopes: what each push opened (a pop closes it).
// Beyond max_c_depth pushes are not recorded, only counted, so pops still
// pair with them.
constexpr std::size_t max_c_depth = 256;
struct c_frame {
  const site* where;    // null: nothing recorded (no session), so the pop records nothing
  std::uint64_t begin;  // no_begin: the ring dropped it (its end is still recorded, and counted)
  counter_marks counters;
};
struct c_stack {
  std::size_t depth = 0;
  c_frame frames[max_c_depth];
};
constinit thread_local c_stack c_scopes{};

// The thread's open step (proftrace_step): its site and begin.
constinit thread_local const site* c_step_site = nullptr;
constinit thread_local std::uint64_t c_step_begin = no_begin;

// A push's name is its runtime text: an empty one (or NULL, or Fortran's
// all blanks) stays empty, as proftrace_push_literal("") is, not this site's.
const site c_push_site{"", "", "proftrace.h", 0, category::user_annotation};

// Sites for names that C passes at run time (literals, instants, counters,
// arg keys): one per (text, category), kept for the life of the process, up
// to the bound of recording/interned_names.hpp. A per-thread cache by pointer (checked
// against the text) keeps the lock to a thread's first use of a name.
struct interned {
  std::string name;
  std::unique_ptr<site> s;
};
std::mutex intern_mutex;
// Looked up by a string_view: a name interned before is found without allocating.
struct text_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};
using intern_map = std::unordered_map<std::string, interned, text_hash, std::equal_to<>>;
intern_map& intern_table() {
  static auto* t = new intern_map;  // never destroyed: used at exit
  return *t;
}
std::size_t interned_name_bytes = 0;  // under intern_mutex

// What a new name past the bound is recorded as, by category (the C API
// interns user_annotation, instant and counter names).
const site over_limit_scope{over_limit_name, "", "proftrace.h", 0, category::user_annotation};
const site over_limit_instant{over_limit_name, "", "proftrace.h", 0, category::instant};
const site over_limit_counter{over_limit_name, "", "proftrace.h", 0, category::counter};
const site* over_limit_site(category cat) noexcept {
  if (cat == category::instant) return &over_limit_instant;
  if (cat == category::counter) return &over_limit_counter;
  return &over_limit_scope;
}

// The site of `key` (the name, then '\x1f' and the category's digit) under
// intern_mutex: found, added within the bound, or the over-limit site.
const site* find_or_add_site(std::string_view key, const char* name, std::size_t length, category cat) {
  intern_map& table = intern_table();
  if (const auto it = table.find(key); it != table.end()) return it->second.s.get();
  if (table.size() >= max_interned_names || length > max_interned_name_bytes - interned_name_bytes) {
    count_name_over_limit();
    return over_limit_site(cat);
  }
  interned& entry = table.try_emplace(std::string(key)).first->second;
  entry.name = name;
  entry.s.reset(new site{entry.name.c_str(), "", "proftrace.h", 0, cat});
  interned_name_bytes += length;
  return entry.s.get();
}

constexpr std::size_t intern_cache_size = 64;
struct intern_cache_entry {
  const char* pointer;
  const site* s;
};
constinit thread_local intern_cache_entry intern_cache[intern_cache_size]{};
constinit thread_local volatile bool interning = false;  // inside intern_site's lock, on this thread
struct interning_guard {
  interning_guard() noexcept {
    interning = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~interning_guard() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    interning = false;
  }
  interning_guard(const interning_guard&) = delete;
  interning_guard& operator=(const interning_guard&) = delete;
};

const site* intern_site(const char* name, category cat) noexcept {
  if (name == nullptr) name = "";
  const std::size_t slot = ((reinterpret_cast<std::uintptr_t>(name) >> 3) * 4 + static_cast<std::size_t>(cat)) %
                           intern_cache_size;
  intern_cache_entry& e = intern_cache[slot];
  if (e.pointer == name && e.s->cat == cat && std::strcmp(e.s->name, name) == 0) return e.s;
  // A signal handler that interrupted this thread inside the lock below
  // would wait for itself: its event is dropped and counted instead.
  if (interning) {
    if (ring* r = this_thread_ring) r->count_reentered();
    else registry::instance().unattached_drops.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  try {
    const in_profiler_guard own_allocations;
    const interning_guard guard;
    std::lock_guard lock(intern_mutex);
    const std::size_t length = std::strlen(name);
    char short_key[256];
    std::string long_key;
    char* key = length + 2 <= sizeof short_key ? short_key : (long_key.resize(length + 2), long_key.data());
    std::memcpy(key, name, length);
    key[length] = '\x1f';
    key[length + 1] = static_cast<char>('0' + static_cast<int>(cat));
    const site* found = find_or_add_site({key, length + 2}, name, length, cat);
    if (found->name != over_limit_name) e = {name, found};  // an over-limit name is looked up again
    return found;
  } catch (...) {
    return nullptr;
  }
}

// A string given with its length, as far as its first NUL: the one rule for
// every _n form (a scope's, an instant's, a key's or a value's text), so
// that a name reads the same in the trace, the table and the C string the
// interning keeps. NULL is "".
std::string_view text_n(const char* text, std::size_t length) noexcept {
  if (text == nullptr) return {};
  const void* nul = std::memchr(text, '\0', length);
  return {text, nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - text) : length};
}

// By text alone (a string with its length): a lookup under the lock.
const site* intern_site_n(const char* name, std::size_t length, category cat) noexcept {
  try {
    const in_profiler_guard own_allocations;
    const std::string text(text_n(name, length));
    return intern_site(text.c_str(), cat);  // a cache hit is checked against the text, so a reused address is safe
  } catch (...) {
    return nullptr;
  }
}

void push_frame(const site* where, std::uint64_t begin, counter_marks counters) noexcept {
  // The depth first, then the frame: a signal handler's push and pop in
  // between use the next frame and leave this one alone.
  c_stack& st = c_scopes;
  const std::size_t at = st.depth++;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (at < max_c_depth) st.frames[at] = {where, begin, counters};
  else if (recording()) too_deep_pushes.fetch_add(1, std::memory_order_relaxed);
}

void end_thread_step() noexcept {
  if (c_step_site != nullptr) record_end(c_step_site, c_step_begin);  // a dropped begin's end counts too
  c_step_site = nullptr;
  c_step_begin = no_begin;
}

void report_unmatched_pops() {
  static std::uint64_t reported = 0, reported_deep = 0;
  const std::uint64_t n = unmatched_pops.load(std::memory_order_relaxed);
  if (n > reported) {
    warn(std::to_string(n - reported) +
         " proftrace_pop() call(s) had no proftrace_push() open on their thread; they were ignored");
    reported = n;
  }
  const std::uint64_t deep = too_deep_pushes.load(std::memory_order_relaxed);
  if (deep > reported_deep) {
    warn(std::to_string(deep - reported_deep) + " proftrace_push() call(s) nested deeper than " +
         std::to_string(max_c_depth) + " on their thread were not recorded (their pops still pair with them)");
    reported_deep = deep;
  }
}

// What the table printed to stderr heads with, so that the ranks of a job,
// which all print theirs there, can be told apart.
std::string table_heading() {
  const auto d = distributed();
  if (!d) return {};
  return "proftrace table of rank " + std::to_string(d->rank) + " of " + std::to_string(d->world_size) +
         (d->host.empty() ? std::string() : " on " + d->host) + " (pid " + std::to_string(::getpid()) + "):\n";
}

// The table `table` prints: the rank's own, or with `ranks` the job's on
// rank 0 and none on the others (the rank's own, with why, where the job's
// could not be had).
std::string table_text(const profile& p, bool across_ranks) {
  if (!p.has_trace()) return {};
  if (!across_ranks) return table_heading() + p.table();
  const rank_averages job = p.rank_averages();
  if (!job.rows.empty())
    return "proftrace table of the job's " + std::to_string(job.ranks) + " ranks (rank_averages):\n" + job.table();
  const auto d = distributed();
  if (d && d->rank != 0) return {};
  return table_heading() + p.table() + "(no table of the job: " + job.note + ")\n";
}

// Stops and destroys `s` (under c_session_mutex): its traces go out, its
// table to stderr when asked, in one write.
void finish(c_session* s) {
  end_thread_step();
  try {
    s->p->stop();
    if (s->table) std::cerr << table_text(*s->p, s->across_ranks) << std::flush;
  } catch (const std::exception& e) {
    warn(std::string("stopping the session failed: ") + e.what());
  }
  report_unmatched_pops();
  delete s;
}

// A child made by fork() inherits its parent's slot (under c_session_mutex).
// By default the parent's session does not run in the child: it is the
// child's to forget, so that the child can start a session of its own and
// a proftrace_stop there writes nothing of the parent's. One restarted by
// in_forked_child=fresh_session runs here: the child's own.
void forget_parents_session() {
  if (!current || current->owner == ::getpid() || current->p->running()) return;
  delete current;  // not running: its destructor stops nothing
  current = nullptr;
}

// A session still running at exit (PROFTRACE_CONFIG's, or a
// proftrace_start never stopped) stops as proftrace_stop would: its table
// printed when asked, unmatched pops reported.
void stop_c_session_at_exit() {
  std::lock_guard lock(c_session_mutex);
  if (current) {
    finish(current);
    current = nullptr;
  }
}

// Starts a session from `config`; 0 or an error in last_error.
int start_session(const char* config, bool from_environment) {
  c_config parsed;
  std::string error;
  if (!parse_config(config ? config : "", parsed, error)) {
    last_error = (from_environment ? "PROFTRACE_CONFIG: " : "proftrace_start: ") + error;
    return 1;
  }
  std::lock_guard lock(c_session_mutex);
  forget_parents_session();
  if (current) {
    if (!current->from_environment) {
      last_error = current->owner == ::getpid()
                       ? "proftrace_start: a session started by proftrace_start is already running; call "
                         "proftrace_stop first"
                       : "proftrace_start: the parent's session runs in this forked child "
                         "(in_forked_child=fresh_session); call proftrace_stop first";
      return 2;
    }
    warn("proftrace_start takes over from the session PROFTRACE_CONFIG started; that session stops "
         "here and its trace is kept");
    finish(current);
    current = nullptr;
  }
  try {
    auto s = std::make_unique<c_session>();
    s->across_ranks = parsed.opts.across_ranks;
    s->p = std::make_unique<profile>(std::move(parsed.opts));
    s->table = parsed.table;
    s->from_environment = from_environment;
    s->p->start();
    current = s.release();
    // Registered after the first session (and the flusher) started, so it
    // runs before their statics are destroyed.
    static const bool stops_at_exit = std::atexit(stop_c_session_at_exit) == 0;
    (void)stops_at_exit;
  } catch (const std::exception& e) {
    last_error = (from_environment ? "PROFTRACE_CONFIG: " : "proftrace_start: ") + std::string(e.what());
    return 3;
  }
  last_error.clear();
  return 0;
}

}  // namespace

void yield_environment_session(const void* starting) noexcept {
  std::lock_guard lock(c_session_mutex);
  if (!current || !current->from_environment || static_cast<const session*>(current->p.get()) == starting) return;
  warn("the program starts a profiler of its own: the session PROFTRACE_CONFIG started stops here "
       "(its trace is kept) and the program's takes over");
  try {
    finish(current);
  } catch (...) {
  }
  current = nullptr;
}

void start_from_environment() noexcept {
  static bool done = false;
  if (done) return;
  done = true;
  const char* config = std::getenv("PROFTRACE_CONFIG");
  if (config == nullptr || *config == '\0') return;
  try {
    if (start_session(config, true) != 0)
      std::fprintf(stderr, "proftrace: %s; the program runs unprofiled\n", last_error.c_str());
  } catch (...) {
    std::fprintf(stderr, "proftrace: PROFTRACE_CONFIG: the session could not start; the program runs unprofiled\n");
  }
}

}  // namespace proftrace::detail

namespace pd = proftrace::detail;

extern "C" {

int proftrace_start(const char* config) {
  try {
    return pd::start_session(config, false);
  } catch (...) {
    pd::last_error = "proftrace_start: out of memory";
    return 4;
  }
}

const char* proftrace_last_error(void) { return pd::last_error.c_str(); }

void proftrace_stop(void) {
  std::lock_guard lock(pd::c_session_mutex);
  pd::forget_parents_session();
  // PROFTRACE_CONFIG's session is the environment's: it runs to the exit
  // (or until the program starts its own), whatever the program's code stops.
  if (!pd::current || pd::current->from_environment) return;
  pd::finish(pd::current);
  pd::current = nullptr;
}

void proftrace_step(void) {
  pd::end_thread_step();
  if (!(pd::session_state.load(std::memory_order_relaxed) & pd::state_session)) return;
  bool drives = false;
  const std::int64_t n = pd::enter_step(drives);
  if (n < 0) return;
  pd::c_step_site = drives ? &pd::step_site : &pd::thread_step_site;
  pd::c_step_begin = pd::record_begin(pd::c_step_site, static_cast<std::uint64_t>(n));
}

void proftrace_push(const char* name) {
  proftrace_push_n(name, name ? std::strlen(name) : 0);
}

void proftrace_push_n(const char* name, size_t length) {
  const pd::site* where = nullptr;  // set once a begin is recorded (or dropped): the pop records its end
  std::uint64_t begin = pd::no_begin;
  pd::counter_marks counters;
  counters.open(0);
  if (pd::recording() && pd::c_scopes.depth < pd::max_c_depth) {
    where = &pd::c_push_site;
    counters.open(pd::session_state.load(std::memory_order_relaxed));
    begin = pd::record_dynamic_begin(where, pd::text_n(name, length));
  }
  pd::push_frame(where, begin, counters);
}

void proftrace_push_literal(const char* name) {
  const pd::site* s = nullptr;
  std::uint64_t begin = pd::no_begin;
  pd::counter_marks counters;
  counters.open(0);
  if (pd::recording() && pd::c_scopes.depth < pd::max_c_depth) {
    s = pd::intern_site(name, pd::category::user_annotation);
    if (s) {
      counters.open(pd::session_state.load(std::memory_order_relaxed));
      begin = pd::record_begin(s);
    }
  }
  pd::push_frame(s, begin, counters);
}

void proftrace_pop(void) {
  pd::c_stack& st = pd::c_scopes;
  if (st.depth == 0) {
    pd::unmatched_pops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The frame first, then the depth (push_frame's order, reversed).
  const std::size_t at = st.depth - 1;
  if (at >= pd::max_c_depth) {
    st.depth = at;
    return;
  }
  pd::c_frame f = st.frames[at];
  std::atomic_signal_fence(std::memory_order_seq_cst);
  st.depth = at;
  f.counters.close(f.where != nullptr ? f.begin : pd::no_begin);
  // After a dropped begin too: its end is counted, unpaired, as the lost scope's second event.
  if (f.where != nullptr) pd::record_end(f.where, f.begin);
}

uint64_t proftrace_unmatched_pops(void) { return pd::unmatched_pops.load(std::memory_order_relaxed); }

void proftrace_instant(const char* name) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site(name, pd::category::instant)) pd::record_instant(s);
}

void proftrace_counter(const char* name, double value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site(name, pd::category::counter)) pd::record_counter(s, value);
}

void proftrace_arg_int(const char* key, int64_t value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site(key, pd::category::user_annotation)) pd::record_arg_integer(s, value);
}
void proftrace_arg_double(const char* key, double value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site(key, pd::category::user_annotation)) pd::record_arg_floating(s, value);
}
void proftrace_arg_string(const char* key, const char* value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site(key, pd::category::user_annotation))
    pd::record_arg_string(s, value ? value : "");
}

void proftrace_alloc(const void* address, int64_t bytes, int device) {
  if (pd::recording_memory()) pd::record_alloc(address, bytes, device);
}
void proftrace_free(const void* address, int device) {
  if (pd::recording_memory()) pd::record_free(address, device);
}

void proftrace_flops(int64_t flops) {
  if (pd::recording_flops()) pd::record_estimate(pd::raw_flop_count(flops));
}
void proftrace_matmul(int64_t m, int64_t n, int64_t k) {
  if (pd::recording_flops()) pd::record_estimate(proftrace::flops::mm(m, n, k));
}

int proftrace_recording(void) { return pd::recording() ? 1 : 0; }

}  // extern "C"

extern "C" {

int proftrace_start_n(const char* config, size_t length) {
  try {
    const std::string text(pd::text_n(config, length));
    return proftrace_start(text.c_str());
  } catch (...) {
    return 4;
  }
}
void proftrace_instant_n(const char* name, size_t length) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site_n(name, length, pd::category::instant)) pd::record_instant(s);
}
void proftrace_counter_n(const char* name, size_t length, double value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site_n(name, length, pd::category::counter)) pd::record_counter(s, value);
}
void proftrace_arg_int_n(const char* key, size_t length, int64_t value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site_n(key, length, pd::category::user_annotation)) pd::record_arg_integer(s, value);
}
void proftrace_arg_double_n(const char* key, size_t length, double value) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site_n(key, length, pd::category::user_annotation))
    pd::record_arg_floating(s, value);
}
void proftrace_arg_string_n(const char* key, size_t key_length, const char* value, size_t value_length) {
  if (!pd::recording()) return;
  if (const pd::site* s = pd::intern_site_n(key, key_length, pd::category::user_annotation))
    pd::record_arg_string(s, pd::text_n(value, value_length));
}

}  // extern "C"
