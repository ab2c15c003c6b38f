// What a trace says of itself: its head's keys (this rank, its clock against
// the other ranks', the options it recorded with) and add_metadata's.
#include <dlfcn.h>
#include <pwd.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "collect/mpi/bridge.hpp"
#include "formats/json_text.hpp"
#include "helpers/warn.hpp"
#include "proftrace/detail/clock.hpp"
#include "session_impl.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

// Option keys the trace itself writes: metadata under these names would
// give readers a second, conflicting member.
constexpr std::string_view reserved_metadata_keys[] = {"schemaVersion", "deviceProperties", "displayTimeUnit",
                                                       "baseTimeNanoseconds", "traceEvents", "proftrace",
                                                       "traceName", "distributedInfo", "clockAlignment",
                                                       "proftraceRun"};

void check_json(std::string_view key, std::string_view value) {
  for (std::string_view reserved : reserved_metadata_keys)
    if (key == reserved)
      throw std::invalid_argument("proftrace: metadata key '" + std::string(key) + "' is reserved: the trace writes it");
  boost::system::error_code ec;
  boost::json::parse(value, ec);
  if (ec) throw std::invalid_argument("proftrace: metadata '" + std::string(key) + "' is not valid JSON: " + ec.message());
}

std::string quoted(std::string_view s) {
  std::string out;
  detail::append_json_string(out, s);
  return out;
}

std::string distributed_json(const distributed_info& d) {
  // HTA reads the rank with the regex "rank":\s+(\d+): keep the space.
  std::string j = "{\"backend\": ";
  detail::append_json_string(j, d.backend);
  j += ", \"rank\": " + std::to_string(d.rank) + ", \"world_size\": " + std::to_string(d.world_size) + ", \"host\": ";
  detail::append_json_string(j, d.host);
  j += ", \"source\": ";
  detail::append_json_string(j, d.source);
  return j + "}";
}

// Who ran what where, as Caliper's Adiak records it: a Caliper profile's
// run metadata (lib/formats/caliper/caliper_run_metadata.hpp).
std::string run_json() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const passwd* pw = ::getpwuid(::geteuid());
  const char* user = pw ? pw->pw_name : std::getenv("USER");
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  for (char& c : cmdline) c = c == '\0' ? ' ' : c;
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).filename().string();
  std::string j = "{\"user\": ";
  detail::append_json_string(j, user ? user : "");
  j += ", \"hostname\": ";
  detail::append_json_string(j, host);
  j += ", \"executable\": ";
  detail::append_json_string(j, exe);
  j += ", \"cmdline\": ";
  detail::append_json_string(j, cmdline);
  return j + "}";
}

// True where the process has an MPI library that says it is initialised
// (found with dlsym, as proftrace itself links no MPI).
bool mpi_initialised() noexcept {
  // MPI_Initialized's C signature is the standard's, whatever the MPI.
  using query = int (*)(int*);
  const auto initialized = reinterpret_cast<query>(::dlsym(RTLD_DEFAULT, "PMPI_Initialized"));
  const auto finalized = reinterpret_cast<query>(::dlsym(RTLD_DEFAULT, "PMPI_Finalized"));
  int yes = 0, done = 0;
  return initialized && finalized && initialized(&yes) == 0 && finalized(&done) == 0 && yes && !done;
}

// MPI is in the process but proftrace::mpi is not linked: say once what is lost.
void warn_mpi_without_bridge() {
  static bool warned = false;
  if (warned || !mpi_initialised()) return;
  warned = true;
  detail::warn("MPI is initialised but this program does not link proftrace::mpi (pkg-config proftrace-mpi): "
               "the rank comes from the launcher's environment and no clock offset against other ranks is measured");
}

}  // namespace

namespace detail {

// How this rank's timestamps relate to the other ranks'. With proftrace::mpi
// linked and MPI initialised (a collective: every rank's start() and stop()
// call it) the offset against rank 0 measured by ping-pong; otherwise each
// host's Unix time as it is.
std::string clock_alignment_json(const std::optional<distributed_info>& dist, std::string_view when) {
  // The exchange is collective: a job whose ranks do not all start and stop
  // sessions together turns it off on every rank, or it would wait forever.
  if (const char* off = std::getenv("PROFTRACE_NO_CLOCK_ALIGNMENT"); off && *off && std::string_view(off) != "0")
    return "{\"method\": \"unix_time\", \"note\": \"PROFTRACE_NO_CLOCK_ALIGNMENT is set: no offset against other "
           "ranks was measured\"}";
  const mpi_bridge* mpi = installed_mpi_bridge();
  if (!mpi) warn_mpi_without_bridge();
  if (mpi && dist && dist->source == "MPI_Comm_rank" && dist->world_size > 1 && !in_forked_child) {
    if (const auto o = mpi->measure_clock_offset(trace_clock_ns, 16)) {
      // at_ns: when, on this rank's trace clock, so that the offsets at
      // start and at stop give the drift between (proftrace merge).
      return "{\"method\": \"mpi_ping_pong\", \"reference_rank\": 0, \"measured\": \"" + std::string(when) +
             "\", \"offset_ns\": " + std::to_string(o->offset_ns) + ", \"round_trip_ns\": " +
             std::to_string(o->round_trip_ns) + ", \"rounds\": " + std::to_string(o->rounds) +
             ", \"at_ns\": " + std::to_string(trace_clock_ns()) + "}";
    }
  }
  return "{\"method\": \"unix_time\", \"note\": \"timestamps are this host's Unix time; no offset against other "
         "ranks was measured\"}";
}

}  // namespace detail

void session::impl::add_head_metadata(detail::window_options& w) const {
  if (dist) w.head_metadata.emplace_back("distributedInfo", distributed_json(*dist));
  w.head_metadata.emplace_back("clockAlignment", clock_alignment);
  w.head_metadata.emplace_back("proftraceRun", run_json());
  if (opts.profile_memory) w.head_metadata.emplace_back("profile_memory", "1");
  if (opts.with_stack) w.head_metadata.emplace_back("with_stack", "1");
  if (opts.record_shapes) w.head_metadata.emplace_back("record_shapes", "1");
  if (opts.with_modules) w.head_metadata.emplace_back("with_modules", "1");
  if (opts.with_flops) w.head_metadata.emplace_back("with_flops", "1");
  for (auto& kv : preset) w.head_metadata.push_back(kv);
}

// A session that started before MPI_Init (PROFTRACE_CONFIG) takes its
// rank from MPI and measures its clock offset at the first step or stop
// after it, or in MPI_Init itself where proftrace::mpi_calls is linked:
// points every rank reaches together, as start() is. The trace already
// open gets it in its tail (its head was written before).
void session::impl::align_after_mpi_init() {
  if (!detail::installed_mpi_bridge() || (dist && dist->source == "MPI_Comm_rank")) return;
  auto now = distributed();
  if (!now || now->source != "MPI_Comm_rank") return;  // MPI not initialised yet
  dist = std::move(now);
  clock_alignment = detail::clock_alignment_json(dist, "after_mpi_init");
  if (trace_open && clock_alignment.find("offset_ns") != std::string::npos)
    detail::flusher::instance().add_metadata("clockAlignmentAfterMpiInit", clock_alignment);
}

// The offset measured again as the session or MPI ends: the drift since
// start(), in the tail of the trace still open.
void session::impl::align_at_stop(std::string_view when) {
  std::string at_stop = detail::clock_alignment_json(dist, when);
  if (trace_open && at_stop.find("offset_ns") != std::string::npos)
    detail::flusher::instance().add_metadata("clockAlignmentAtStop", std::move(at_stop));
}

void session::add_metadata(std::string_view key, std::string_view value) { add_metadata_json(key, quoted(value)); }

void session::add_metadata_json(std::string_view key, std::string_view json_value) {
  check_json(key, json_value);
  std::lock_guard lock(detail::session_mutex);
  impl& s = *impl_;
  if (s.trace_open && detail::flusher::instance().add_metadata(std::string(key), std::string(json_value))) return;
  if (s.last) {
    s.last->tail_metadata.emplace_back(key, json_value);
    return;
  }
  s.preset.emplace_back(key, json_value);
}

void session::preset_metadata_json(std::string_view key, std::string_view json_value) {
  check_json(key, json_value);
  std::lock_guard lock(detail::session_mutex);
  impl_->preset.emplace_back(key, json_value);
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
