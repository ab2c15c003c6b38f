// The command line's facade: torch's rules for a summary row, the same as the
// live aggregator's.
//
//   if (proftrace::detail::is_step_event(name)) ...
//   proftrace::detail::add_event(row, duration, self, flops, memory);
//
// What tools/ uses of them: step and row rules (step_number, row_key,
// is_host_category, add_event, ...), add_saturating.
#pragma once

#include "aggregation/torch_rules.hpp"
