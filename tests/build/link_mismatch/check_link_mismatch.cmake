# Link-time detection of mixed collector selections (run with cmake -P).
#
# The collector selection and the overflow default name an inline namespace
# (PROFTRACE_ABI_NAMESPACE, e.g. abi_c1_m0_f0_k0_n0_p1_o0), so a translation unit
# built with a selection other than the library's references symbols the
# library does not define. This script compiles tests/build/link_mismatch/main.cpp
# against the already-built static library:
#   control   with the library's own definitions: compiles, links and runs;
#   mismatch  the same with the other PROFTRACE_WITH_FLOPS value (a collector
#             the library did or did not compile in): compiles, but linking
#             fails with an undefined reference into that selection's namespace;
#   mismatch  the same with another PROFTRACE_OVERFLOW_POLICY: also fails to
#             link, naming that policy's namespace.
#
# Inputs (-D...): CXX, SRC, LIBRARY (the static libproftrace), WORK_DIR, and
# '|'-separated lists INCLUDE_DIRS, DEFINITIONS (the library's PUBLIC
# definitions, NAME=VALUE), LINK_FLAGS.
cmake_minimum_required(VERSION 3.22)

foreach(v CXX SRC LIBRARY WORK_DIR INCLUDE_DIRS DEFINITIONS LINK_FLAGS)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_link_mismatch.cmake: -D${v}=... is required")
  endif()
endforeach()
foreach(v INCLUDE_DIRS DEFINITIONS LINK_FLAGS)
  string(REPLACE "|" ";" ${v} "${${v}}")
endforeach()
set(inc_flags)
foreach(d IN LISTS INCLUDE_DIRS)
  list(APPEND inc_flags "-I${d}")
endforeach()
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "library ${LIBRARY} not built")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(ENV{PROFTRACE_SPOOL_DIR} "${WORK_DIR}")

# The library's selection as -D flags, with NAME overridden to VALUE.
function(definitions_with out_var name value)
  set(flags)
  set(found FALSE)
  foreach(d IN LISTS DEFINITIONS)
    string(REGEX MATCH "^([A-Za-z_0-9]+)=(.*)$" m "${d}")
    if(CMAKE_MATCH_1 STREQUAL name)
      list(APPEND flags "-D${name}=${value}")
      set(found TRUE)
    else()
      list(APPEND flags "-D${d}")
    endif()
  endforeach()
  if(name AND NOT found)
    list(APPEND flags "-D${name}=${value}")
  endif()
  set(${out_var} "${flags}" PARENT_SCOPE)
endfunction()

function(library_value out_var name)
  foreach(d IN LISTS DEFINITIONS)
    if(d MATCHES "^${name}=(.*)$")
      set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "${name} is not among the library's definitions: ${DEFINITIONS}")
endfunction()

# The library's value of a 0/1 switch, flipped (0 -> 1, anything else -> 0).
function(other_library_value out_var name)
  library_value(value ${name})
  if(value STREQUAL "0")
    set(${out_var} 1 PARENT_SCOPE)
  else()
    set(${out_var} 0 PARENT_SCOPE)
  endif()
endfunction()

# Compiles (must succeed) then links; sets <tag>_link_rc and <tag>_link_log.
function(build tag)
  set(obj "${WORK_DIR}/${tag}.o")
  set(exe "${WORK_DIR}/${tag}")
  execute_process(COMMAND ${CXX} -std=c++20 ${inc_flags} ${ARGN} -c "${SRC}" -o "${obj}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${tag}] compiling failed, but only the link may fail:\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CXX} "${obj}" "${LIBRARY}" ${LINK_FLAGS} -o "${exe}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${tag}_link_rc "${rc}" PARENT_SCOPE)
  set(${tag}_link_log "${out}${err}" PARENT_SCOPE)
  set(${tag}_exe "${exe}" PARENT_SCOPE)
endfunction()

set(failures 0)
macro(fail msg)
  message(SEND_ERROR "${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

# Positive control: the library's own selection links and runs.
definitions_with(same "" "")
build(control ${same})
if(NOT control_link_rc EQUAL 0)
  fail("[control] the library's own selection failed to link:\n${control_link_log}")
else()
  execute_process(COMMAND "${control_exe}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail("[control] the program linked but failed (${rc}):\n${out}${err}")
  else()
    message(STATUS "[control] links and runs: ${out}")
  endif()
endif()

# Mismatches: compile fine, fail at link time naming the other ABI namespace.
other_library_value(other_policy PROFTRACE_OVERFLOW_POLICY)
other_library_value(other_flops PROFTRACE_WITH_FLOPS)
library_value(cpu PROFTRACE_WITH_CPU_RANGES)
library_value(flops PROFTRACE_WITH_FLOPS)
library_value(cuda PROFTRACE_WITH_CUDA)
library_value(nvtx PROFTRACE_WITH_NVTX)
library_value(memory PROFTRACE_WITH_MEMORY)
library_value(counters PROFTRACE_WITH_COUNTERS)

foreach(case "collector;PROFTRACE_WITH_FLOPS;${other_flops};abi_c${cpu}_m${memory}_f${other_flops}"
             "overflow;PROFTRACE_OVERFLOW_POLICY;${other_policy};abi_c${cpu}_m${memory}_f${flops}_k${cuda}_n${nvtx}_p${counters}_o${other_policy}")
  list(GET case 0 tag)
  list(GET case 1 name)
  list(GET case 2 value)
  list(GET case 3 namespace)
  definitions_with(flags ${name} ${value})
  build(${tag} ${flags})
  if(${tag}_link_rc EQUAL 0)
    fail("[${tag}] ${name}=${value} against a library built with the other selection LINKED: the mismatch went undetected")
  elseif(NOT ${tag}_link_log MATCHES "undefined (reference|symbol)")
    fail("[${tag}] the link failed, but not with an undefined reference:\n${${tag}_link_log}")
  elseif(NOT ${tag}_link_log MATCHES "${namespace}")
    fail("[${tag}] the undefined references do not name ${namespace}:\n${${tag}_link_log}")
  else()
    string(REGEX MATCH "[^\n]*undefined (reference|symbol)[^\n]*" first "${${tag}_link_log}")
    message(STATUS "[${tag}] ${name}=${value} fails to link as required: ${first}")
  endif()
endforeach()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} link-mismatch check(s) failed")
endif()
