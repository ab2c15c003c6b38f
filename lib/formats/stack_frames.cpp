#include "stack_frames.hpp"

#include "formats/json_text.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {
// "file(line): name"; a site with no source line of its own (OpenMP's
// constructs, C pushes, proftrace's own spans) is its name alone.
std::string located(const site& where, std::string_view name) {
  if (where.line == 0) return std::string(name);
  std::string frame = where.file;
  frame += '(';
  append_int(frame, where.line);
  frame += "): ";
  frame += name;
  return frame;
}
}  // namespace

std::string frame_of(const site& f) {
  if (f.cat == category::step) return "ProfilerStep*";
  return located(f, f.name);
}

std::string frame_of(const open_scope& s) {
  if (s.dynamic_name.empty()) return frame_of(*s.where);
  return located(*s.where, s.dynamic_name);
}

std::string_view frame_name(std::string_view frame) noexcept {
  const auto at = frame.find("): ");
  if (at == std::string_view::npos) return frame;
  const auto open = frame.rfind('(', at);
  if (open == std::string_view::npos || open + 1 == at) return frame;
  for (auto i = open + 1; i < at; ++i)
    if (frame[i] < '0' || frame[i] > '9') return frame;
  return frame.substr(at + 3);
}

bool is_frame(const thread_state& ts, const open_scope& s) noexcept {
  return s.step != step_kind::api_step || ts.api_steps_discarded == nullptr || !*ts.api_steps_discarded;
}

std::string call_stack(const thread_state& ts, const open_scope& s) {
  std::string frames = frame_of(s);
  for (std::size_t i = ts.stack.size(); i-- > 0;) {
    if (!is_frame(ts, ts.stack[i])) continue;
    frames += ';';
    frames += frame_of(ts.stack[i]);
  }
  return frames;
}

std::string module_path(const thread_state& ts) {
  std::string path;
  for (const open_scope& f : ts.stack)
    if (f.where->cat == category::module) {
      if (!path.empty()) path += '.';
      path += f.where->name;
    }
  return path;
}

}  // namespace proftrace::detail
