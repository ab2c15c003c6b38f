// proftrace/proftrace.hpp — everything, for programs that want one include.
//
//   #include <proftrace/proftrace.hpp>
//   int main() {
//     proftrace::profile p;
//     p.start();
//     { PROF_SCOPE("work"); work(); }
//     p.stop();
//     std::cout << p.key_averages().table();
//   }
#pragma once

#include "async_range.hpp"
#include "collect/cpu_ranges.hpp"
#include "collect/cuda_kernels.hpp"
#include "collect/nvtx_ranges.hpp"
#include "collect/flops.hpp"
#include "collect/memory.hpp"
#include "collectors.hpp"
#include "config.hpp"
#include "execution_trace.hpp"
#include "flops.hpp"
#include "key_averages.hpp"
#include "macros.hpp"
#include "memory_category.hpp"
#include "memory_stats.hpp"
#include "overflow.hpp"
#include "profile.hpp"
#include "profile_file_name.hpp"
#include "profileit.hpp"
#include "schedule.hpp"
#include "signals.hpp"
#include "stats_summary.hpp"
#include "timeit.hpp"
#include "trace_handler.hpp"
#include "warnings.hpp"
