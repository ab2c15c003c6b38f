# Configures tests/build/packaging/c_only against an install prefix, once with C
# only and once with Fortran only (where FC is given): each must fail with
# proftrace's message naming CXX, and nothing from Boost's CMake files.
# Inputs (-D...): PREFIX, SOURCE (the c_only folder), WORK_DIR, CC; FC (optional).
cmake_minimum_required(VERSION 3.22)
set(languages "C")
if(FC)
  list(APPEND languages Fortran)
endif()
foreach(language IN LISTS languages)
  file(REMOVE_RECURSE ${WORK_DIR}/${language})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK_DIR}/${language} -DONLY=${language}
            -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_Fortran_COMPILER=${FC}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "a ${language}-only project configured against an enabled proftrace")
  endif()
  if(NOT err MATCHES "proftrace needs the CXX language" OR err MATCHES "Boost")
    message(FATAL_ERROR "a ${language}-only project did not get proftrace's message:\n${err}")
  endif()
  message(STATUS "${language} only: stopped with proftrace's message")
endforeach()
