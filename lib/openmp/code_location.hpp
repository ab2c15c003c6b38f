// Internal: a code address as people read it, for naming OpenMP regions.
//
//   describe_code(codeptr_ra)   // "main (app.cpp:12)", "main", or "app+0x1a2b"
//
// The function and file:line come from the binary's symbols and debug line
// tables through binutils' addr2line (spawned once per address, never on a
// hot path: callers keep the answer); without addr2line or debug
// information, the dynamic symbol's name (dladdr), else the object's file
// name and the address's offset in it.
#pragma once

#include <string>

#include "proftrace/config.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

std::string describe_code(const void* address);

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
