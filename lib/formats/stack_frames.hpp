// How traces and tables show a stack: frames ("file(line): name"), the
// "Call stack" and "Module Hierarchy" of a scope on its thread.
#pragma once

#include <string>
#include <string_view>

#include "records/thread.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// A stack frame as traces and tables show it: "file(line): name" (the name
// alone for a site with no line of its own), or "ProfilerStep*" for every
// step, so identical call paths stay one group across steps.
std::string frame_of(const site& f);
// The same for an open scope: its runtime name, if it has one.
std::string frame_of(const open_scope& s);
// A frame's name: what follows its "file(line): ", if it has one.
std::string_view frame_name(std::string_view frame) noexcept;
// Whether an open scope is a frame of the stacks its children show (not a
// profile::step() annotation that will not be written).
bool is_frame(const thread_state& ts, const open_scope& s) noexcept;
// "Call stack": `s` and the scopes around it on ts.stack, innermost first, ';'-separated.
std::string call_stack(const thread_state& ts, const open_scope& s);
// "Module Hierarchy": the PROF_MODULE scopes on ts.stack, outermost first, '.'-separated.
std::string module_path(const thread_state& ts);

}  // namespace proftrace::detail
