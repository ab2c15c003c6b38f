// The command line's facade: the external merge sort that keeps a summary of
// a trace larger than memory within bounds.
//
//   proftrace::detail::sorted_runs<record, by_start> runs(by_start{}, {.max_items = 1 << 20, .max_bytes = 16 << 20});
//   runs.add(r, payload);
//   runs.merge([](const record& r, std::string_view payload) { ... });  // in order, once
//
// What tools/ uses of it: sorted_runs.
#pragma once

#include "spool/sorted_runs.hpp"
