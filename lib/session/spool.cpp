// Each trace's spool: the file it streams into, named here; removed with
// the session unless it became an export or on_trace_ready could not take it.
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <system_error>

#include "collect/collector_hooks.hpp"
#include "formats/trace_formats.hpp"
#include "session_impl.hpp"
#include "tensorboard_handler.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace {

std::uint64_t spool_sequence = 0;

// This run's part of every spool name: its start time and a random number,
// so that a new run with the same pid (containers start every run as pid 1)
// never meets the files a crashed run left behind.
// A plain array, never destroyed: exit() on another thread runs static
// destructors while this thread may still be starting a trace.
const char* run_token() {
  static const auto token = [] {
    std::array<char, 40> text{};
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    std::snprintf(text.data(), text.size(), "%llx-%08x", static_cast<unsigned long long>(now.count()),
                  static_cast<unsigned>(std::random_device{}()));
    return text;
  }();
  return token.data();
}

std::filesystem::path default_spool_dir() {
  if (const char* env = std::getenv("PROFTRACE_SPOOL_DIR"); env && *env) return env;
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : tmp;
}

}  // namespace

// The spool's format: none on a rank trace_ranks leaves out, else the
// option's, else the handler's.
trace_format session::impl::stream_format() const {
  if (!traces_here) return trace_format::none;
  if (opts.stream_format != trace_format::automatic) return detail::stream_format_for(opts.stream_format);
  const auto* handler = opts.on_trace_ready.target<detail::tensorboard_handler>();
  return detail::stream_format_for(handler ? handler->format : trace_format::automatic);
}

bool session::impl::profile_only() const { return detail::row_of(stream_format()).profile_only; }

std::string session::impl::no_file_reason() const {
  if (!traces_here)
    return "rank " + std::to_string(dist ? dist->rank : -1) +
           " is not among the ranks that write traces (trace_ranks, PROFTRACE_TRACE_RANKS): it records a profile only";
  return "the session is profile-only (stream_format = none): it records no trace";
}

detail::window_options session::impl::window_for_next_trace() {
  detail::window_options w;
  w.format = stream_format();
  const std::filesystem::path dir = opts.spool_dir.empty() ? default_spool_dir() : opts.spool_dir;
  if (!profile_only())
    w.path = dir / ("proftrace-" + std::to_string(::getpid()) + "-" + run_token() + "-" +
                    std::to_string(++spool_sequence) +
                    detail::trace_file_suffix(w.format, detail::compression::none) + ".part");
  add_head_metadata(w);
  w.record_shapes = opts.record_shapes;
  w.with_stack = opts.with_stack;
  w.with_modules = opts.with_modules;
  w.retain_events = opts.retain_events || observing();
  w.first_step = record_steps ? step_num : -1;
  for (const detail::collector_hooks* c : detail::build_collectors())
    if (c->open_window && activities.contains(c->kind)) c->open_window(opts, w);
  return w;
}

void session::impl::discard_last() {
  if (!last) return;
  std::error_code ec;
  // A spool that could not be written completely is kept (its warning
  // named it): `proftrace validate --repair` recovers what it holds.
  if (last->spool && last_owner == ::getpid() && last->write_error.empty() && !last->spool_is_export && !keep_last)
    std::filesystem::remove(last->path, ec);
  last.reset();
  keep_last = false;
}

// The last trace's spool, complete, renamed from .part, is kept: the trace
// on_trace_ready could not take, or nobody is left to export. Returns where.
std::filesystem::path session::impl::keep_last_spool() {
  if (!last || !last->spool || last_owner != ::getpid()) return {};
  std::filesystem::path kept = last->path;
  if (kept.extension() == ".part") kept.replace_extension();
  std::error_code ec;
  if (kept != last->path) std::filesystem::rename(last->path, kept, ec);
  if (!ec) last->path = kept;
  keep_last = true;
  return last->path;
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
