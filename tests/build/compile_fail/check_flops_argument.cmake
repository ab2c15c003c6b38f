# PROF_FLOPS with an argument it does not take must stop the build with
# proftrace's own message (a static_assert in detail/recorder.hpp), not an
# error from deep inside the recorder. Run with cmake -P:
#   1. a floating-point count, a pointer, a string literal, bool, and a struct
#      without value/valid: each fails to compile, and the compiler's output
#      holds the message;
#   2. positive controls: integer counts of several types, an estimate in
#      braces with commas, the braced form alone and PROF_FLOPS_SCOPE compile
#      in the same translation unit setup (so a failure above is the
#      argument's, not the setup's).
# Inputs (-D...): CXX, INCLUDE_DIRS ('|'-separated), DEFINITIONS ('|'-separated,
# the library's public ones), WORK_DIR.
cmake_minimum_required(VERSION 3.22)
foreach(v CXX INCLUDE_DIRS WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_flops_argument.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
string(REPLACE "|" ";" include_dirs "${INCLUDE_DIRS}")
set(flags -std=c++20 -fsyntax-only)
foreach(d IN LISTS include_dirs)
  list(APPEND flags "-I${d}")
endforeach()
if(DEFINED DEFINITIONS AND NOT DEFINITIONS STREQUAL "")
  string(REPLACE "|" ";" definitions "${DEFINITIONS}")
  foreach(d IN LISTS definitions)
    list(APPEND flags "-D${d}")
  endforeach()
endif()

set(expected "PROF_FLOPS takes a FLOP count of an integer type or a proftrace::flops::estimate")
set(failures 0)

# compile_case(name body): `{ body; }` goes into main(); sets rc and log.
function(compile_case name body)
  file(WRITE "${WORK_DIR}/${name}.cpp"
       "#include <proftrace/macros.hpp>\n#include <cstdint>\nstruct not_an_estimate { int flops = 1; };\n"
       "int main() {\n  [[maybe_unused]] double d = 1.5; [[maybe_unused]] int i = 3; [[maybe_unused]] long n = 1000;\n"
       "  { ${body}; }\n  return 0;\n}\n")
  execute_process(COMMAND ${CXX} ${flags} "${WORK_DIR}/${name}.cpp"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc ${rc} PARENT_SCOPE)
  set(log "${out}${err}" PARENT_SCOPE)
endfunction()

foreach(case_body
    "double|PROF_FLOPS(d)"
    "float_literal|PROF_FLOPS(2.5e9)"
    "pointer|PROF_FLOPS(&i)"
    "string|PROF_FLOPS(\"1000\")"
    "bool|PROF_FLOPS(true)"
    "struct|PROF_FLOPS(not_an_estimate{})"
    "scope_double|PROF_FLOPS_SCOPE(\"x\", d)")
  string(FIND "${case_body}" "|" bar)
  string(SUBSTRING "${case_body}" 0 ${bar} name)
  math(EXPR start "${bar} + 1")
  string(SUBSTRING "${case_body}" ${start} -1 body)
  compile_case(bad_${name} "${body}")
  if(rc EQUAL 0)
    message(SEND_ERROR "[${name}] ${body} compiled: PROF_FLOPS accepted an argument it must reject")
    math(EXPR failures "${failures} + 1")
  elseif(NOT log MATCHES "${expected}")
    message(SEND_ERROR "[${name}] ${body} failed, but without the message \"${expected}\":\n${log}")
    math(EXPR failures "${failures} + 1")
  else()
    message(STATUS "[${name}] ${body} fails to compile with proftrace's message")
  endif()
endforeach()

compile_case(control
  "PROF_FLOPS(n); PROF_FLOPS(i); PROF_FLOPS(7u); PROF_FLOPS(std::uint64_t{8}); PROF_FLOPS(short{9});
  PROF_FLOPS(proftrace::flops::estimate{n, true}); PROF_FLOPS({n, true}); PROF_FLOPS(proftrace::flops::mm(2, 2, 2));
  { PROF_FLOPS_SCOPE(\"a\", n); } { PROF_FLOPS_SCOPE(\"b\", proftrace::flops::estimate{n, true}); }")
if(NOT rc EQUAL 0)
  message(SEND_ERROR "[control] the accepted forms failed to compile:\n${log}")
  math(EXPR failures "${failures} + 1")
else()
  message(STATUS "[control] integer counts and estimates compile")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} PROF_FLOPS compile-fail check(s) failed")
endif()
