// The OpenMP collector at a session's edges (collector_hooks.hpp): OMPT's
// callbacks record parallel regions, loops and tasks.
#include "collect/collector_hooks.hpp"
#if PROFTRACE_WITH_OPENMP
#include "ompt_tool.hpp"
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

#if PROFTRACE_WITH_OPENMP
extern const collector_hooks openmp_hooks{
    .kind = activity::openmp,
    .start = &start_openmp};
#else
extern const collector_hooks openmp_hooks = absent_collector(activity::openmp);
#endif

}  // namespace proftrace::detail
