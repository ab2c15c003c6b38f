# Compile-fail and configure-fail cases (run with cmake -P): a selection the
# design forbids must stop the build with a message that names the problem.
#   1. PROFTRACE_WITH_NVTX=1 without PROFTRACE_WITH_CUDA=1 on a translation
#      unit: #error from <proftrace/config.hpp>;
#   2. configuring proftrace with PROFTRACE_OVERFLOW_POLICY=bogus: a CMake
#      error naming the valid policies;
#   3. a positive control: the same translation unit with a valid selection
#      compiles.
# Inputs (-D...): CXX, SOURCE_DIR (proftrace's), WORK_DIR.
cmake_minimum_required(VERSION 3.22)
foreach(v CXX SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_compile_fail.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(WRITE "${WORK_DIR}/tu.cpp" "#include <proftrace/macros.hpp>\nint main() { PROF_SCOPE(\"x\"); return 0; }\n")

function(compile_tu out_rc out_log)
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${SOURCE_DIR}/include ${ARGN} ${WORK_DIR}/tu.cpp
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_log} "${out}${err}" PARENT_SCOPE)
endfunction()

set(failures 0)
compile_tu(rc log -DPROFTRACE_WITH_CUDA=0 -DPROFTRACE_WITH_NVTX=1)
if(rc EQUAL 0)
  message(SEND_ERROR "[nvtx without cuda] compiled: the forbidden selection went undetected")
  math(EXPR failures "${failures} + 1")
elseif(NOT log MATCHES "PROFTRACE_WITH_NVTX=1 needs PROFTRACE_WITH_CUDA=1")
  message(SEND_ERROR "[nvtx without cuda] failed, but not with the expected message:\n${log}")
  math(EXPR failures "${failures} + 1")
else()
  message(STATUS "[nvtx without cuda] fails to compile as required")
endif()

compile_tu(rc log -DPROFTRACE_WITH_CUDA=0 -DPROFTRACE_WITH_NVTX=0)
if(NOT rc EQUAL 0)
  message(SEND_ERROR "[control] a valid selection failed to compile:\n${log}")
  math(EXPR failures "${failures} + 1")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/bad_option -DPROFTRACE_OVERFLOW_POLICY=bogus
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(SEND_ERROR "[bad option] PROFTRACE_OVERFLOW_POLICY=bogus configured")
  math(EXPR failures "${failures} + 1")
elseif(NOT err MATCHES "PROFTRACE_OVERFLOW_POLICY must be drop, block or drop_oldest")
  message(SEND_ERROR "[bad option] failed, but not with the expected message:\n${err}")
  math(EXPR failures "${failures} + 1")
else()
  message(STATUS "[bad option] PROFTRACE_OVERFLOW_POLICY=bogus stops the configuration as required")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} compile-fail check(s) failed")
endif()
