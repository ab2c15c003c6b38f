#include "pairing/scope_stack.hpp"

#include "json_text.hpp"
#include "registry.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

std::string frame_of(const site& f) {
  if (f.cat == category::step) return "ProfilerStep*";
  std::string frame = f.file;
  frame += '(';
  append_int(frame, f.line);
  frame += "): ";
  frame += f.name;
  return frame;
}

std::string frame_of(const open_scope& s) {
  if (s.dynamic_name.empty()) return frame_of(*s.where);
  std::string frame = s.where->file;
  frame += '(';
  append_int(frame, s.where->line);
  frame += "): ";
  frame += s.dynamic_name;
  return frame;
}

bool is_frame(const thread_state& ts, const open_scope& s) noexcept {
  return s.where != &api_step_site || ts.api_steps_discarded == nullptr || !*ts.api_steps_discarded;
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

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
