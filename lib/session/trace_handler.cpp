// on_trace_ready: checked at start(), run as each trace is ready, its
// failures warned of; the TensorBoard handler tensorboard_trace_handler() gives.
#include "proftrace/trace_handler.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "helpers/warn.hpp"
#include "proftrace/distributed.hpp"
#include "session_impl.hpp"
#include "tensorboard_handler.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

// A tensorboard_trace_handler's directory that cannot be made or written
// says so at start(), not after the whole run. A directory made only to
// find out is removed again: the handler makes it with its first trace.
void session::impl::check_handler_destination() const {
  const auto* handler = opts.on_trace_ready.target<detail::tensorboard_handler>();
  if (!handler || detail::row_of(handler->format).profile_only) return;
  std::error_code ec;
  std::filesystem::path first_made;  // the outermost directory the probe creates
  for (std::filesystem::path p = handler->dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    first_made = p;
    if (p == p.parent_path()) break;
  }
  if (!first_made.empty()) std::filesystem::create_directories(handler->dir, ec);
  const bool writable = !ec && ::access(handler->dir.c_str(), W_OK) == 0;
  if (!first_made.empty() && !ec) std::filesystem::remove_all(first_made, ec);
  if (writable) return;
  detail::warn("the trace handler's directory '" + handler->dir.string() + "' cannot be written (" +
               (ec ? ec.message() : std::string(std::strerror(errno))) +
               "): recording goes on, and each trace is kept in the spool directory instead, named in a warning");
}

// on_trace_ready, run by step() or stop() (or a PROF_STEP): a failure is
// one warning per session, never an exception out of them.
void session::impl::trace_ready(session& self) {
  if (!opts.on_trace_ready) return;
  // A profile-only trace (trace_format::none, a rank trace_ranks leaves
  // out) has no file for the TensorBoard handler to write.
  if (last && !last->spool && opts.on_trace_ready.target<detail::tensorboard_handler>()) return;
  running_handler = true;
  try {
    opts.on_trace_ready(self);
  } catch (const std::exception& e) {
    handler_failed(e.what());
  } catch (...) {
    handler_failed("an exception that is not a std::exception");
  }
  running_handler = false;
}

// One warning per session; every trace the handler could not take is kept.
void session::impl::handler_failed(const std::string& why) {
  const std::filesystem::path kept = keep_last_spool();
  if (std::exchange(warned_handler, true)) return;
  detail::warn("on_trace_ready failed: " + why +
               (kept.empty() ? std::string(" (later failures of this session are not reported)")
                             : "; the trace is kept at '" + kept.string() +
                                   "' (later failures are not reported; their traces are kept beside it)"));
}

namespace detail {
void tensorboard_handler::operator()(session& p) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("Can't create directory: " + dir.string());
  }
  if (worker_name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    worker_name = std::string(host) + "_" + std::to_string(::getpid());
    // One file per rank, sorted by rank: rank3_host_pid.
    if (const auto d = distributed()) worker_name = "rank" + std::to_string(d->rank) + "_" + worker_name;
  }
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string file = worker_name + "." + std::to_string(now_ns) + trace_file_suffix(format, compressed);
  p.export_chrome_trace(dir / file);
}
}  // namespace detail

trace_ready_fn tensorboard_trace_handler(std::filesystem::path dir, std::string worker_name, bool use_gzip,
                                         trace_format format) {
  const detail::format_row& row = detail::row_of(format);
  // An export-only format is never compressed (an OTF2 archive is a directory of its own files).
  return detail::tensorboard_handler{std::move(dir), std::move(worker_name), row.format,
                                     use_gzip && !row.export_only ? detail::compression::gzip : detail::compression::none};
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
