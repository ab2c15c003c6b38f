# Object-code identity of the disabled macros (run with cmake -P).
#
# Compiles tests/build/objcode/sample.cpp with the same compiler and flags three
# times per optimisation level:
#   with_macros     -DPROFTRACE_ENABLED=0 -DUSE_MACROS=1   (macros present, disabled)
#   without_macros  -DPROFTRACE_ENABLED=0 -DUSE_MACROS=0   (macro lines left out)
#   enabled         -DPROFTRACE_ENABLED=1 -DUSE_MACROS=1   (negative control)
# and requires
#   * with_macros and without_macros: identical raw .text bytes, identical
#     disassembly (raw bytes + relocations) of every code section, identical
#     contents of every non-debug section and identical symbol tables, with
#     no proftrace symbol at all;
#   * enabled: different .text bytes and proftrace symbols present (proves the
#     comparison and the symbol check can see the macros when they do exist).
#
# Inputs (-D...): CXX, SRC, INCLUDE_DIRS and OPT_LEVELS and EXTRA_FLAGS
# ('|'-separated lists), WORK_DIR, OBJCOPY, OBJDUMP, NM.
cmake_minimum_required(VERSION 3.22)

foreach(v CXX SRC INCLUDE_DIRS OPT_LEVELS WORK_DIR OBJCOPY OBJDUMP NM)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_objcode.cmake: -D${v}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" INCLUDE_DIRS "${INCLUDE_DIRS}")
string(REPLACE "|" ";" OPT_LEVELS "${OPT_LEVELS}")
string(REPLACE "|" ";" EXTRA_FLAGS "${EXTRA_FLAGS}")
set(inc_flags)
foreach(d IN LISTS INCLUDE_DIRS)
  list(APPEND inc_flags "-I${d}")
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(failures 0)
macro(fail msg)
  message(SEND_ERROR "${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

function(run_tool out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "command failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(compile obj opt)
  separate_arguments(opt_flags UNIX_COMMAND "${opt}")
  run_tool(ignored ${CXX} -std=c++20 ${opt_flags} ${EXTRA_FLAGS} ${inc_flags} ${ARGN} -c "${SRC}" -o "${obj}")
endfunction()

# Raw bytes of .text, as hex.
function(text_bytes obj out_var)
  run_tool(ignored ${OBJCOPY} -O binary --only-section=.text "${obj}" "${obj}.text.bin")
  file(READ "${obj}.text.bin" hex HEX)
  set(${out_var} "${hex}" PARENT_SCOPE)
endfunction()

# Output of a tool on an object, minus the header line naming the file.
function(tool_listing out_var)
  run_tool(out ${ARGN})
  string(REGEX REPLACE "[^\n]*file format[^\n]*\n" "" out "${out}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Every code section: raw instruction bytes, mnemonics and relocations.
function(disassembly obj out_var)
  tool_listing(out ${OBJDUMP} -d -r -z -w "${obj}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Contents of every section except debug information.
function(section_contents obj out_var)
  run_tool(ignored ${OBJCOPY} --strip-debug "${obj}" "${obj}.nodebug.o")
  tool_listing(out ${OBJDUMP} -s "${obj}.nodebug.o")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(symbols obj out_var)
  run_tool(out ${NM} -C "${obj}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

set(index 0)
foreach(opt IN LISTS OPT_LEVELS)
  math(EXPR index "${index} + 1")
  set(failures_at_start ${failures})
  set(dir "${WORK_DIR}/${index}")
  file(MAKE_DIRECTORY "${dir}")
  set(with "${dir}/with_macros.o")
  set(without "${dir}/without_macros.o")
  set(enabled "${dir}/enabled.o")
  compile("${with}" "${opt}" -DPROFTRACE_ENABLED=0 -DUSE_MACROS=1)
  compile("${without}" "${opt}" -DPROFTRACE_ENABLED=0 -DUSE_MACROS=0)
  compile("${enabled}" "${opt}" -DPROFTRACE_ENABLED=1 -DUSE_MACROS=1)

  text_bytes("${with}" with_text)
  text_bytes("${without}" without_text)
  text_bytes("${enabled}" enabled_text)
  string(LENGTH "${with_text}" with_len)
  string(LENGTH "${without_text}" without_len)
  string(LENGTH "${enabled_text}" enabled_len)
  math(EXPR with_len "${with_len} / 2")
  math(EXPR without_len "${without_len} / 2")
  math(EXPR enabled_len "${enabled_len} / 2")
  if(with_len EQUAL 0)
    fail("[${opt}] empty .text: the sample compiled to nothing, the comparison would prove nothing")
  endif()
  if(NOT with_text STREQUAL without_text)
    fail("[${opt}] .text differs with the disabled macros (${with_len} bytes) and without them (${without_len} bytes): ${with}.text.bin vs ${without}.text.bin")
  endif()

  disassembly("${with}" with_dis)
  disassembly("${without}" without_dis)
  if(NOT with_dis STREQUAL without_dis)
    file(WRITE "${dir}/with_macros.dis" "${with_dis}")
    file(WRITE "${dir}/without_macros.dis" "${without_dis}")
    fail("[${opt}] code sections differ: compare ${dir}/with_macros.dis and ${dir}/without_macros.dis")
  endif()

  section_contents("${with}" with_sections)
  section_contents("${without}" without_sections)
  if(NOT with_sections STREQUAL without_sections)
    file(WRITE "${dir}/with_macros.sections" "${with_sections}")
    file(WRITE "${dir}/without_macros.sections" "${without_sections}")
    fail("[${opt}] section contents differ: compare ${dir}/with_macros.sections and ${dir}/without_macros.sections")
  endif()

  symbols("${with}" with_syms)
  symbols("${without}" without_syms)
  symbols("${enabled}" enabled_syms)
  if(NOT with_syms STREQUAL without_syms)
    fail("[${opt}] symbol tables differ:\n--- with macros\n${with_syms}\n--- without\n${without_syms}")
  endif()
  string(REGEX MATCHALL "[^\n]*proftrace[^\n]*" leaked "${with_syms}")
  if(leaked)
    string(REPLACE ";" "\n" leaked "${leaked}")
    fail("[${opt}] the disabled macros reference proftrace symbols:\n${leaked}")
  endif()

  # Negative controls: the same checks must notice enabled macros.
  if(with_text STREQUAL enabled_text)
    fail("[${opt}] control failed: PROFTRACE_ENABLED=1 left .text unchanged, so the comparison is blind")
  endif()
  if(NOT enabled_syms MATCHES "proftrace")
    fail("[${opt}] control failed: the enabled object names no proftrace symbol, so the symbol check is blind")
  endif()

  file(READ "${with}" with_file HEX)
  file(READ "${without}" without_file HEX)
  if(with_file STREQUAL without_file)
    set(whole "the whole object files are byte-identical")
  else()
    set(whole "the object files differ outside the compared sections")
  endif()
  if(failures EQUAL failures_at_start)
    message(STATUS "[${opt}] .text ${with_len} bytes identical with and without the disabled macros (${whole}); enabled: ${enabled_len} bytes")
  endif()
endforeach()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} object-code check(s) failed")
endif()
