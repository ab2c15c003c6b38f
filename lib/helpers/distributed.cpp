#include "proftrace/distributed.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "collect/mpi/bridge.hpp"
#include "proftrace/config.hpp"
#include "warn.hpp"

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

std::atomic<const detail::mpi_bridge*> bridge{nullptr};

}  // namespace

std::optional<distributed_info> distributed() {
  std::optional<distributed_info> found;
  if (const detail::mpi_bridge* mpi = detail::installed_mpi_bridge()) found = mpi->world_rank();
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

inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

void install_mpi_bridge(const mpi_bridge* b) noexcept { bridge.store(b, std::memory_order_release); }

const mpi_bridge* installed_mpi_bridge() noexcept { return bridge.load(std::memory_order_acquire); }

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
