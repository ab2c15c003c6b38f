#include "proftrace/distributed.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "proftrace/config.hpp"
#include "warn.hpp"

#if PROFTRACE_WITH_MPI
#include <mpi.h>
#endif

namespace proftrace {

namespace {

std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::optional<int> parse_int(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string_view s(text);
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

struct launcher_variables {
  const char* rank;
  const char* size;
  const char* backend;
};
constexpr launcher_variables launchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpi"},
    {"PMI_RANK", "PMI_SIZE", "mpi"},
    {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
    {"RANK", "WORLD_SIZE", "env"},
};

#if PROFTRACE_WITH_MPI
std::optional<distributed_info> from_mpi() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) return std::nullopt;
  distributed_info d;
  MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d.world_size);
  d.backend = "mpi";
  d.source = "MPI_Comm_rank";
  return d;
}
#endif

}  // namespace

std::optional<distributed_info> distributed() {
  std::optional<distributed_info> found;
#if PROFTRACE_WITH_MPI
  found = from_mpi();
#endif
  for (const auto& l : launchers) {
    if (found) break;
    const char* rank_text = std::getenv(l.rank);
    if (rank_text == nullptr) continue;
    const auto rank = parse_int(rank_text);
    const auto size = parse_int(std::getenv(l.size));
    if (!rank || !size || *size <= 0 || *rank < 0 || *rank >= *size) {
      static bool warned = false;
      if (!warned) {
        warned = true;
        const char* size_text = std::getenv(l.size);
        detail::warn(std::string("ignoring ") + l.rank + "=" + rank_text + " with " + l.size + "=" +
                     (size_text ? size_text : "(unset)") + ": not a rank below a positive world size");
      }
      continue;
    }
    found = distributed_info{l.backend, *rank, *size, {}, l.rank};
  }
  if (found) found->host = host_name();
  return found;
}

}  // namespace proftrace
