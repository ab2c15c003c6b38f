// The OpenMP collector (collect::openmp): proftrace as the program's OMPT
// tool. The runtime calls ompt_start_tool when it initialises; the
// callbacks below turn parallel regions, implicit tasks, worksharing
// constructs and waits into scopes on the calling thread's ring (category
// openmp), so user scopes inside a region nest under that thread's
// implicit task. While no session records, a callback only notes the span
// on its thread's small stack (so that ends keep matching begins).
#include <dlfcn.h>
#include <sys/auxv.h>
#include PROFTRACE_OMP_TOOLS_H

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ompt_tool.hpp"
#include "code_location.hpp"
#include "proftrace/detail/recorder.hpp"
#include "recording/registry.hpp"
#include "helpers/warn.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {

std::atomic<bool> tool_active{false};

// ---- sites: the static waits, and one pair per region's code address ----
const site barrier_site{"omp barrier", "", __FILE__, 0, category::openmp};
const site taskwait_site{"omp taskwait", "", __FILE__, 0, category::openmp};
const site taskgroup_site{"omp taskgroup", "", __FILE__, 0, category::openmp};
const site reduction_site{"omp reduction", "", __FILE__, 0, category::openmp};
const site critical_site{"omp critical", "", __FILE__, 0, category::openmp};
const site lock_site{"omp lock", "", __FILE__, 0, category::openmp};
const site ordered_site{"omp ordered", "", __FILE__, 0, category::openmp};

// A construct's sites, named after its code address; made once per address
// and never freed (events point at them).
struct named_sites {
  named_sites(std::string first, std::string second, std::string fn)
      : function(std::move(fn)),
        names{std::move(first), std::move(second)},
        sites{site{names[0].c_str(), "", "", 0, category::openmp}, site{names[1].c_str(), "", "", 0, category::openmp}} {}
  std::string function;  // the construct's enclosing function (for constructs outlined inside it)
  std::string names[2];
  site sites[2];
};
enum construct : int { parallel_region = 0, implicit_task = 1, loop = 0, sections = 1 };

std::mutex sites_mutex;
std::unordered_map<const void*, std::unique_ptr<named_sites>>& sites_by_code() {
  static auto* m = new std::unordered_map<const void*, std::unique_ptr<named_sites>>();  // outlives every thread
  return *m;
}

// The sites of a construct at `codeptr`: `first`/`second` prefix its
// location. `enclosing`: the function that an outlined body stands for.
const named_sites* sites_for(const void* codeptr, const char* first, const char* second, int salt,
                             const std::string& enclosing) {
  // A region and a worksharing construct never share an address, but the
  // key keeps their pairs of names apart all the same.
  const void* key = static_cast<const char*>(codeptr) + salt;
  thread_local std::unordered_map<const void*, const named_sites*> cache;
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  std::lock_guard lock(sites_mutex);
  auto& slot = sites_by_code()[key];
  if (!slot) {
    const code_location c = locate_code(codeptr);
    const std::string where = describe_code(c, enclosing);
    slot = std::make_unique<named_sites>(std::string(first) + ": " + where, std::string(second) + ": " + where,
                                         is_outlined(c.function) ? enclosing : c.function);
  }
  cache.emplace(key, slot.get());
  return slot.get();
}

// ---- teams: when each region ended, for the spans its workers close late ----
// LLVM's libomp reports a worker's end of the region's closing barrier, and
// of its implicit task, only when the worker is next woken (the next
// region's fork, or the runtime's shutdown). Whatever a worker still has
// open of a region that has ended ended with it: those ends are written at
// the region's end. A primary thread keeps one record per nesting level,
// reused by every region it opens there (and never freed: a worker may read
// it during the runtime's shutdown, after the primary's thread_locals are gone).
struct team_record {
  std::atomic<const named_sites*> sites{nullptr};
  std::atomic<std::uint64_t> seq{0};        // the region begun last
  std::atomic<std::uint64_t> ended_seq{0};  // the region ended last, and when
  std::atomic<std::uint64_t> ended_ticks{0};
};
thread_local std::vector<team_record*> teams;  // by nesting depth
thread_local std::size_t parallel_depth = 0;

// ---- the calling thread's open OpenMP spans, innermost last ----
enum span_kind : int { span_parallel, span_implicit, span_work, span_sync };
struct open_span {
  const site* where;
  std::uint64_t begin;  // no_begin: not recorded
  std::uint64_t begin_ticks;
  int kind;
  const team_record* team;  // implicit tasks: their region's team, and which region
  std::uint64_t seq;
};
thread_local std::vector<open_span> open_spans;

// The function of the region this thread works in now (empty: none).
const std::string& current_function() {
  static const std::string none;
  for (std::size_t i = open_spans.size(); i-- > 0;)
    if (open_spans[i].kind == span_implicit && open_spans[i].team)
      if (const named_sites* s = open_spans[i].team->sites.load(std::memory_order_relaxed)) return s->function;
  return none;
}

void open(const site* s, int kind, const team_record* team = nullptr, std::uint64_t seq = 0) {
  open_span span{s, no_begin, 0, kind, team, seq};
  if (recording())
    if (ring* r = thread_ring()) {
      span.begin_ticks = r->now();
      span.begin = r->push(span.begin_ticks, reinterpret_cast<std::uintptr_t>(s), 0, event_kind::begin);
    }
  open_spans.push_back(span);
}

// When spans closing now ended: now, or, on a worker whose region has
// already ended (a late report), that region's end.
std::uint64_t end_ticks(ring* r) {
  for (std::size_t i = open_spans.size(); i-- > 0;) {
    const open_span& s = open_spans[i];
    if (s.kind != span_implicit || s.team == nullptr) continue;
    if (s.team->ended_seq.load(std::memory_order_acquire) >= s.seq)
      return s.team->ended_ticks.load(std::memory_order_relaxed);
    break;
  }
  return r->now();
}

// Closes the innermost open span of `kind` (and, should the runtime have
// skipped an end, whatever opened inside it). Returns when it ended (0: no
// ring, or nothing of that kind was open).
std::uint64_t close(int kind) {
  std::size_t i = open_spans.size();
  while (i > 0 && open_spans[i - 1].kind != kind) --i;
  if (i == 0) return 0;
  --i;
  std::uint64_t ticks = 0;
  ring* r = (session_state.load(std::memory_order_relaxed) & state_session) ? this_thread_ring : nullptr;
  if (r) ticks = end_ticks(r);
  for (std::size_t j = open_spans.size(); j-- > i;) {
    const open_span& s = open_spans[j];
    if (r && s.begin != no_begin)
      r->push(std::max(ticks, s.begin_ticks), reinterpret_cast<std::uintptr_t>(s.where), s.begin, event_kind::end);
  }
  open_spans.resize(i);
  return ticks;
}

// ---- the callbacks ----
const site unnamed_region{"omp parallel", "", __FILE__, 0, category::openmp};
const site unnamed_task{"omp implicit task", "", __FILE__, 0, category::openmp};

void on_parallel_begin(ompt_data_t*, const ompt_frame_t*, ompt_data_t* parallel_data, unsigned int, int,
                       const void* codeptr) {
  if (teams.size() <= parallel_depth) teams.push_back(new team_record);
  team_record* team = teams[parallel_depth++];
  // Named (once per address, which may run addr2line) only while recording.
  const named_sites* s =
      recording() ? sites_for(codeptr, "omp parallel", "omp implicit task", 0, current_function()) : nullptr;
  team->sites.store(s, std::memory_order_relaxed);
  team->seq.store(team->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  parallel_data->ptr = team;
  open(s ? &s->sites[parallel_region] : &unnamed_region, span_parallel);
}

void on_parallel_end(ompt_data_t*, ompt_data_t*, int, const void*) {
  std::uint64_t ticks = close(span_parallel);
  if (parallel_depth == 0) return;
  team_record* team = teams[--parallel_depth];
  if (ticks == 0) ticks = now_ticks();
  team->ended_ticks.store(ticks, std::memory_order_relaxed);
  team->ended_seq.store(team->seq.load(std::memory_order_relaxed), std::memory_order_release);
}

void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t* parallel_data, ompt_data_t*, unsigned int,
                      unsigned int, int flags) {
  if (flags & ompt_task_initial) return;  // the initial task is the program itself
  if (endpoint == ompt_scope_begin) {
    const auto* team = parallel_data ? static_cast<const team_record*>(parallel_data->ptr) : nullptr;
    // The region's number first: its acquire makes the primary's `sites` visible.
    const std::uint64_t seq = team ? team->seq.load(std::memory_order_acquire) : 0;
    const named_sites* s = team ? team->sites.load(std::memory_order_relaxed) : nullptr;
    open(s ? &s->sites[implicit_task] : &unnamed_task, span_implicit, team, seq);
  } else if (endpoint == ompt_scope_end) {
    close(span_implicit);
  }
}

void on_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t*, ompt_data_t*, std::uint64_t,
             const void* codeptr) {
  if (endpoint == ompt_scope_end) {
    close(span_work);
    return;
  }
  const site* s = nullptr;
  if (!recording()) {
    open(&unnamed_region, span_work);  // not recorded: any site
    return;
  }
  switch (type) {
    case ompt_work_loop: s = &sites_for(codeptr, "omp loop", "omp sections", 1, current_function())->sites[loop]; break;
    case ompt_work_sections:
      s = &sites_for(codeptr, "omp loop", "omp sections", 1, current_function())->sites[sections];
      break;
    case ompt_work_single_executor: {
      static const site single{"omp single", "", __FILE__, 0, category::openmp};
      s = &single;
      break;
    }
    case ompt_work_single_other: {  // the threads that skip the block go on to its barrier
      static const site skipped{"omp single: skipped", "", __FILE__, 0, category::openmp};
      s = &skipped;
      break;
    }
    case ompt_work_distribute: {
      static const site distribute{"omp distribute", "", __FILE__, 0, category::openmp};
      s = &distribute;
      break;
    }
    case ompt_work_taskloop: {
      static const site taskloop{"omp taskloop", "", __FILE__, 0, category::openmp};
      s = &taskloop;
      break;
    }
    default: {
      static const site other{"omp workshare", "", __FILE__, 0, category::openmp};
      s = &other;
      break;
    }
  }
  open(s, span_work);
}

// The time a thread waits: a barrier's, a taskwait's, a taskgroup's end.
void on_sync_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t*, ompt_data_t*, const void*) {
  if (endpoint == ompt_scope_end) {
    close(span_sync);
    return;
  }
  const site* s = &barrier_site;
  if (kind == ompt_sync_region_taskwait) s = &taskwait_site;
  else if (kind == ompt_sync_region_taskgroup) s = &taskgroup_site;
  else if (kind == ompt_sync_region_reduction) s = &reduction_site;
  open(s, span_sync);
}

// The wait for a critical section, a lock, ordered: from the request to the
// grant, written once granted as one complete record (a child of whatever
// is open). A failed omp_test_lock is reported as a request with no grant
// (libomp names it a plain lock), so a request only waits for its grant: the
// next request replaces it. Nestable locks and atomics are left out.
struct pending_wait {
  const site* where = nullptr;
  ompt_wait_id_t id = 0;
  std::uint64_t begin_ticks = 0;
};
thread_local pending_wait waiting;

void on_mutex_acquire(ompt_mutex_t kind, unsigned int, unsigned int, ompt_wait_id_t id, const void*) {
  const site* s = kind == ompt_mutex_critical ? &critical_site
                  : kind == ompt_mutex_ordered ? &ordered_site
                  : kind == ompt_mutex_lock    ? &lock_site
                                               : nullptr;
  waiting.where = nullptr;
  if (s == nullptr || !recording()) return;
  if (ring* r = thread_ring()) waiting = {s, id, r->now()};
}

void on_mutex_acquired(ompt_mutex_t, ompt_wait_id_t id, const void*) {
  if (waiting.where == nullptr || waiting.id != id) return;
  const site* s = waiting.where;
  waiting.where = nullptr;
  if (ring* r = (session_state.load(std::memory_order_relaxed) & state_session) ? this_thread_ring : nullptr)
    r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), waiting.begin_ticks, event_kind::complete);
}

// A worker of the runtime's pool is "OpenMP worker N" (N: 1, 2, ... in the
// order the runtime started them) unless the program names it.
void on_thread_begin(ompt_thread_t type, ompt_data_t*) {
  if (type != ompt_thread_worker) return;
  static std::atomic<int> workers{0};
  thread_local char name[32];
  std::snprintf(name, sizeof name, "OpenMP worker %d", workers.fetch_add(1, std::memory_order_relaxed) + 1);
  set_default_thread_name(name);
}

int initialize(ompt_function_lookup_t lookup, int, ompt_data_t*) {
  const auto set_callback = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  if (set_callback == nullptr) return 0;
  const auto set = [&](ompt_callbacks_t which, auto fn) {
    return set_callback(which, reinterpret_cast<ompt_callback_t>(fn));
  };
  set(ompt_callback_thread_begin, &on_thread_begin);
  set(ompt_callback_parallel_begin, &on_parallel_begin);
  set(ompt_callback_parallel_end, &on_parallel_end);
  set(ompt_callback_implicit_task, &on_implicit_task);
  set(ompt_callback_work, &on_work);
  set(ompt_callback_sync_region_wait, &on_sync_wait);
  set(ompt_callback_mutex_acquire, &on_mutex_acquire);
  set(ompt_callback_mutex_acquired, &on_mutex_acquired);
  tool_active.store(true, std::memory_order_release);
  return 1;  // keep the tool
}

void finalize(ompt_data_t*) { tool_active.store(false, std::memory_order_release); }

ompt_start_tool_result_t tool{&initialize, &finalize, {}};

// Whether an OpenMP runtime is in the process; asking it a question makes
// it initialise (and so load its tool, if it has the interface). The
// runtime's file name goes to `runtime`.
bool openmp_runtime_present(std::string& runtime) {
  void* query = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  if (query == nullptr) return false;
  Dl_info info{};
  if (dladdr(query, &info) != 0 && info.dli_fname) runtime = info.dli_fname;
  (void)reinterpret_cast<int (*)()>(query)();
  return true;
}


// The program's symbolizer starts with the session, outside any measured span.
bool tool_ready() {
  if (!tool_active.load(std::memory_order_acquire)) return false;
  warm_up_code_locations(reinterpret_cast<const void*>(getauxval(AT_ENTRY)));
  return true;
}

}  // namespace

bool start_openmp(const profile_options&, bool named, bool) {
  if (tool_ready()) return true;
  std::string runtime;
  if (!openmp_runtime_present(runtime)) {
    if (named) warn_once("openmp-absent", "activity OPENMP: no OpenMP runtime is loaded in this process; nothing to record");
    return false;
  }
  if (tool_ready()) return true;
  warn_once("openmp-no-ompt",
            "OpenMP regions are not recorded: the program's OpenMP runtime (" + (runtime.empty() ? std::string("?") : runtime) +
                ") did not load proftrace as its OMPT tool (GCC's libgomp has no OMPT; LLVM's libomp, clang -fopenmp, "
                "has, unless OMP_TOOL=disabled); everything else is recorded");
  return false;
}

}  // namespace proftrace::detail

// The runtime's entry point (OpenMP 5.0, section 4.2.1). Weak: a program
// that brings its own tool keeps it.
extern "C" __attribute__((weak, visibility("default"))) ompt_start_tool_result_t* ompt_start_tool(unsigned int,
                                                                                                  const char*) {
  return &proftrace::detail::tool;
}
