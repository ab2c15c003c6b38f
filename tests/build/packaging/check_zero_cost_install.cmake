# A zero-cost release as a user installs it (run with cmake -P): proftrace
# configured with PROFTRACE_ENABLED=OFF (CUDA left on AUTO, MPI not asked for:
# its components are there all the same),
# built, installed, and the consumer built against the installation with
# find_package, run, and checked to carry nothing of the profiler
# (consumer/check_zero_cost_binary.cmake).
# Inputs (-D...): SOURCE_DIR, WORK_DIR, CXX, GENERATOR, CONSUMER_DIR; CC, PYTHON and TESTS_DIR
# (optional): the Makefile consumer; FORTRAN
# (optional): the Fortran compiler, whose zero-cost module the consumer must then find.
cmake_minimum_required(VERSION 3.22)
foreach(v SOURCE_DIR WORK_DIR CXX GENERATOR CONSUMER_DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_zero_cost_install.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
if(FORTRAN)
  set(EXTRA -DCMAKE_Fortran_COMPILER=${FORTRAN} -DPROFTRACE_EXPECT_FORTRAN=ON)
else()
  set(EXTRA -DPROFTRACE_EXPECT_FORTRAN=OFF)
endif()
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
endfunction()
step("configure proftrace with PROFTRACE_ENABLED=OFF"
  ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CXX_COMPILER=${CXX} -DPROFTRACE_ENABLED=OFF -DPROFTRACE_BUILD_EXAMPLES=OFF ${EXTRA})
step("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step("install" ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix)
step("consumer through find_package, run and checked"
  ${CMAKE_CTEST_COMMAND} --build-and-test ${CONSUMER_DIR} ${WORK_DIR}/consumer --build-generator ${GENERATOR}
  --build-options -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} -DPROFTRACE_CONSUME=find_package
                  -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DPROFTRACE_CHECK_ZERO_COST=ON ${EXTRA}
  --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure)
# A C-only CMake project against the same install: it configures (no CXX
# needed), and its program links as C, without the C++ runtime.
if(CC AND TESTS_DIR)
  step("C-only CMake project: configure"
    ${CMAKE_COMMAND} -S ${TESTS_DIR}/build/packaging/c_only -B ${WORK_DIR}/c_only -G ${GENERATOR} -DONLY=C
    -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DPROFTRACE_TESTS_DIR=${TESTS_DIR})
  step("C-only CMake project: build" ${CMAKE_COMMAND} --build ${WORK_DIR}/c_only)
  step("C-only CMake project: run" ${WORK_DIR}/c_only/c_only)
  execute_process(COMMAND readelf -d ${WORK_DIR}/c_only/c_only OUTPUT_VARIABLE dynamic)
  if(dynamic MATCHES "stdc\\+\\+|gcc_s|boost|mpi|proftrace")
    message(FATAL_ERROR "the zero-cost C program links more than C:\n${dynamic}")
  endif()
endif()
# A Makefile project against the same install through pkg-config alone: the
# C program links as C, none gains proftrace, Boost or MPI, and every module
# of the enabled install is there (tests/build/packaging/makefile).
if(PYTHON AND TESTS_DIR)
  set(fortran_flag "")
  if(FORTRAN)
    set(fortran_flag --fortran)
  endif()
  set(ENV{CC} "${CC}")
  set(ENV{CXX} "${CXX}")
  set(ENV{FC} "${FORTRAN}")
  step("Makefile consumer through pkg-config"
    ${PYTHON} ${TESTS_DIR}/build/packaging/makefile/check_makefile_consumer.py --prefix ${WORK_DIR}/prefix
    --tests ${TESTS_DIR} --work ${WORK_DIR}/makefile --zero-cost ${fortran_flag})
endif()
