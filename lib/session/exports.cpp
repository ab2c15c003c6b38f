// The exports of the last finished trace: the trace itself, in its spool's
// format or converted, collapsed stacks, the memory timeline.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "formats/trace_formats.hpp"
#include "helpers/warn.hpp"
#include "formats/stack_frames.hpp"
#include "reports/memory_timeline.hpp"
#include "session_impl.hpp"
#include "spool/export_temporary.hpp"
#include "spool/trace_file.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

// Says once per session, for an export that has no trace to write.
void session::impl::warn_no_trace(const char* what, const std::filesystem::path& path, bool running) const {
  if (std::exchange(warned_no_trace, true)) return;
  detail::warn(std::string(what) + ": nothing written to '" + path.string() + "': " + no_trace_reason(running));
}

void session::export_stacks(const std::filesystem::path& path, std::string_view metric) const {
  std::string text;
  {
    std::lock_guard lock(detail::session_mutex);
    const auto& last = impl_->last;
    if (!(last ? last->with_stack : impl_->opts.with_stack))
      throw std::logic_error("proftrace: export_stacks() requires with_stack=true");
    event_averages all;
    if (has_trace()) all.rows = last->averages;  // finest grouping: every distinct stack
    // A frame is its scope's name, as a line's last frame (the row's own
    // key) and as `proftrace stacks` writes the same trace: one scope, one
    // frame, caller or not. (A row's stack holds "file(line): name".)
    for (event_average& r : all.rows)
      for (std::string& frame : r.stack)
        frame = std::string(detail::frame_name(frame));
    text = all.collapsed_stacks(metric);  // checks the metric, trace or not
    if (!has_trace()) return impl_->warn_no_trace("export_stacks()", path, detail::active_session == this);
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error("proftrace: cannot write stacks '" + path.string() + "': " + std::strerror(errno));
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("proftrace: cannot write stacks '" + path.string() + "'");
}

void session::export_chrome_trace(const std::filesystem::path& path) const {
  std::lock_guard lock(detail::session_mutex);
  if (!has_trace()) return impl_->warn_no_trace("export_chrome_trace()", path, detail::active_session == this);
  if (!impl_->last->spool)
    throw std::logic_error("proftrace: export_chrome_trace('" + path.string() + "'): " + impl_->no_file_reason() +
                           ": nothing is written; key_averages(), table() and rank_averages() have its rows");
  // A spool that could not be written completely exports what it holds,
  // its "proftrace" counters marking the trace incomplete.
  const auto& last = impl_->last;
  if (!detail::names_a_trace_suffix(path))
    detail::warn("proftrace: export_chrome_trace('" + path.string() + "'): '" + path.extension().string() +
                 "' names no trace format (" + detail::format_values(".", ", ") +
                 "): written as uncompressed Kineto JSON");
  const detail::format_row& to = *detail::trace_name_of(path).format;
  const detail::format_row& from = detail::row_of(last->format);
  if (&to == &from) {
    // The first plain export on the spool's file system takes the spool itself.
    const bool ours = impl_->last_owner == ::getpid() && !last->spool_is_export && last->write_error.empty();
    if (ours && last->spool->move_to(last->tail(path.string()), path)) {
      last->path = path;
      last->spool_is_export = true;
      return;
    }
    last->spool->export_to(last->tail(path.string()), path);
    return;
  }
  // The other format: the spool's own as it would export, converted. That
  // copy is a temporary of `path` (export_temporary.hpp): a kill leaves it
  // for the next export to `path` to remove.
  std::optional<detail::export_temporary> own;
  try {
    own.emplace(path, detail::export_temporary_options{.suffix = std::string(from.suffix), .or_temp_dir = true});
  } catch (const std::system_error& e) {
    throw std::runtime_error("proftrace: cannot write trace '" + path.string() + "': " + e.code().message());
  }
  try {
    last->spool->export_to(last->tail(path.string()), own->path(), &*own);
    detail::convert_trace(from, to, own->path(), path);
  } catch (const std::runtime_error& e) {
    // The converters' messages name the file; the library's all start with "proftrace: ".
    if (std::string_view(e.what()).starts_with("proftrace: ")) throw;
    throw std::runtime_error(std::string("proftrace: ") + e.what());
  }
}

void session::export_memory_timeline(const std::filesystem::path& path, std::string_view device) const {
  std::string text;
  {
    std::lock_guard lock(detail::session_mutex);
    const auto& last = impl_->last;
    if (!impl_->opts.profile_memory)
      throw std::logic_error("proftrace: export_memory_timeline() requires profile_memory=true");
    int id = -1;
    if (!device.empty()) id = detail::parse_memory_device(device);
    if (!has_trace()) return impl_->warn_no_trace("export_memory_timeline()", path, detail::active_session == this);
    if (device.empty() && std::any_of(last->memory.begin(), last->memory.end(), [](const auto& r) { return r.device == 0; }))
      id = 0;
    const std::string name = path.filename().string();
    if (name.ends_with(".html")) {
      memory_peaks peaks;
      for (const auto& d : detail::memory_stats_of(last->memory))
        if (d.device == id) peaks = d.trace;
      text = detail::timeline_html(detail::coalesce(last->memory, id), id, peaks);
    } else if (name.ends_with("raw.json.gz")) {
      text = detail::raw_timeline_json(last->memory, id);
    } else {
      text = detail::timeline_json(detail::coalesce(last->memory, id));
    }
  }
  detail::write_compressed(path, text);
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
