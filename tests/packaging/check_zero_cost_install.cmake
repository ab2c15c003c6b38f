# A zero-cost release as a user installs it (run with cmake -P): proftrace
# configured with PROFTRACE_ENABLED=OFF (CUDA left on AUTO, MPI asked for),
# built, installed, and the consumer built against the installation with
# find_package, run, and checked to carry nothing of the profiler
# (consumer/check_zero_cost_binary.cmake).
# Inputs (-D...): SOURCE_DIR, WORK_DIR, CXX, GENERATOR, CONSUMER_DIR; FORTRAN
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
  -DCMAKE_CXX_COMPILER=${CXX} -DPROFTRACE_ENABLED=OFF -DPROFTRACE_WITH_MPI=ON -DPROFTRACE_BUILD_EXAMPLES=OFF ${EXTRA})
step("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step("install" ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix)
step("consumer through find_package, run and checked"
  ${CMAKE_CTEST_COMMAND} --build-and-test ${CONSUMER_DIR} ${WORK_DIR}/consumer --build-generator ${GENERATOR}
  --build-options -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} -DPROFTRACE_CONSUME=find_package
                  -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DPROFTRACE_CHECK_ZERO_COST=ON ${EXTRA}
  --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure)
