// The command line's facade: the job's report across ranks read back from
// the .cali.json that rank_averages::write_profile wrote.
//
//   if (const auto job = proftrace::detail::read_rank_profile("job.cali.json"))
//     std::cout << job->table(options);   // what the job's rank_averages::table() printed
//
// What tools/ uses of it: read_rank_profile (the table is the public
// rank_averages::table()).
#pragma once

#include "formats/caliper/rank_profile.hpp"
