// Internal: a code address as people read it, for naming OpenMP constructs.
//
//   const code_location c = locate_code(codeptr_ra);   // {"solve", "solver.cpp:42"}
//   describe_code(c, "")                               // "solve (solver.cpp:42)"
//
// The function and file:line come from the object's symbols and debug line
// tables through binutils' addr2line, one process per object kept running
// (started on first use; warm_up_code_locations starts it ahead, outside
// any measured span); without addr2line or debug information, the dynamic
// symbol (dladdr), else the object's file name and the address's offset.
// Never on a hot path: callers keep the answer per address.
#pragma once

#include <string>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

struct code_location {
  std::string function;  // without its parameters; empty if unknown
  std::string location;  // "file.cpp:42"; empty if unknown
};

code_location locate_code(const void* address);
// addr2line's "/path/file.cpp:42" as "file.cpp:42"; empty where it knows no
// line ("??:0", "??:?", "file.cpp:?").
std::string source_line_of(const std::string& where);
// Starts the symbolizer of the object holding `address`.
void warm_up_code_locations(const void* address);
// The compiler's outlined bodies of OpenMP constructs (".omp_outlined."):
// named after their enclosing function instead.
bool is_outlined(const std::string& function);
// "function (file:line)"; an outlined function is replaced by `instead_of_outlined`.
std::string describe_code(const code_location& c, const std::string& instead_of_outlined);

}  // namespace proftrace::detail
