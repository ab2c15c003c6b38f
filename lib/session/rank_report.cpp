// The job's report (profile_options::across_ranks): each finished trace's
// rows, by name and stack, reduced over MPI into rank 0's rank_averages().
#include <map>
#include <tuple>

#include "aggregation/rank_reduction.hpp"
#include "session_impl.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

// The reduction's keys: a name and, with_stack, its whole stack; rows that
// differ only in their input shapes are one.
std::vector<event_average> rows_by_name_and_stack(const std::vector<event_average>& rows) {
  std::map<std::tuple<std::string, std::vector<std::string>>, std::size_t> index;
  std::vector<event_average> out;
  for (const event_average& r : rows) {
    const auto [it, added] = index.try_emplace({r.key, r.stack}, out.size());
    if (!added) {
      out[it->second].merge(r);
      continue;
    }
    out.push_back(r);
    out.back().input_shapes.clear();
  }
  return out;
}

}  // namespace

// Collective: run as every trace closes, from step(), stop() or a PROF_STEP,
// never when exit() or a signal ends the session (the other ranks are not
// there), nor in a child made by fork().
void session::impl::reduce_across_ranks() {
  job.reset();
  job_note.clear();
  if (!opts.across_ranks || !last) return;
  if (ended_at_exit || detail::in_forked_child) {
    job_note = "the session ended at exit() or in a forked child: its ranks were not reduced (a collective needs every rank)";
    return;
  }
  job = detail::reduce_rows_across_ranks(rows_by_name_and_stack(last->averages));
  if (!job)
    job_note = "no MPI to reduce over: the program does not link proftrace::mpi, or MPI was not initialised "
               "(or already finalised) when the trace ended";
}

proftrace::rank_averages session::rank_averages() const {
  std::lock_guard lock(detail::session_mutex);
  if (impl_->job) return *impl_->job;
  proftrace::rank_averages none;
  if (!impl_->opts.across_ranks) none.note = "across_ranks is off: the session reports this rank only (key_averages())";
  else if (!has_trace()) none.note = impl_->no_trace_reason(detail::active_session == this);
  else none.note = impl_->job_note;
  return none;
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
