# Every build switch in one list. Each becomes a 0/1 PUBLIC definition
# PROFTRACE_<FEATURE> and a line of the generated build_config.hpp.

option(PROFTRACE_ENABLED "Compile the PROF_* macros in (OFF: they expand to nothing)" ON)
option(PROFTRACE_WITH_CPU_RANGES "CPU range collector (PROF_SCOPE, PROF_STEP, ...)" ON)
option(PROFTRACE_WITH_FLOPS "FLOP estimator collector (PROF_MATMUL, PROF_CONV, ...)" ON)
option(PROFTRACE_WITH_MEMORY "Memory collector (PROF_ALLOC, PROF_FREE)" ON)
set(PROFTRACE_WITH_CUDA AUTO CACHE STRING "CUDA collector: ON, OFF or AUTO (on when the CUDA toolkit is found)")
option(PROFTRACE_WITH_MPI "MPI-aware sessions: rank from MPI, clock alignment against rank 0 (needs MPI)" OFF)
set(PROFTRACE_WITH_NVTX AUTO CACHE STRING "NVTX3 range per recorded scope: ON, OFF or AUTO (on with the CUDA collector)")
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(proftrace_counters_default ON)
else()
  set(proftrace_counters_default OFF)
endif()
option(PROFTRACE_WITH_COUNTERS "Per-scope counters through perf_event_open (Linux)" ${proftrace_counters_default})
set(PROFTRACE_WITH_OPENMP AUTO CACHE STRING "OpenMP collector through OMPT: ON, OFF or AUTO (on where omp-tools.h is found)")
set(PROFTRACE_WITH_OTF2 AUTO CACHE STRING "OTF2 archives (.otf2) through libotf2: ON, OFF or AUTO (on where pkg-config finds otf2)")
set(PROFTRACE_OVERFLOW_POLICY drop CACHE STRING "Default ring overflow policy: drop, block or drop_oldest")
set(PROFTRACE_RING_EVENTS 32768 CACHE STRING "Default events per thread ring (power of two)")
set(PROFTRACE_RING_GROWTH 4 CACHE STRING "How many times its size a thread's ring may grow to when the flusher falls behind (1: never; a power of two)")
# The tests and the command line need the recorder itself, which a
# zero-cost build (PROFTRACE_ENABLED=OFF) does not build.
if(PROJECT_IS_TOP_LEVEL AND PROFTRACE_ENABLED)
  set(PROFTRACE_RECORDER_TOP_LEVEL ON)
else()
  set(PROFTRACE_RECORDER_TOP_LEVEL OFF)
endif()
option(PROFTRACE_BUILD_TESTS "Build the doctest suites" ${PROFTRACE_RECORDER_TOP_LEVEL})
option(PROFTRACE_BUILD_EXAMPLES "Build the examples (the demo)" ${PROJECT_IS_TOP_LEVEL})
option(PROFTRACE_BUILD_TOOLS "Build the proftrace command line (tools/)" ${PROFTRACE_RECORDER_TOP_LEVEL})
option(PROFTRACE_BUILD_BENCH "Build the Google Benchmark overhead suite" OFF)
option(PROFTRACE_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (clang only; scripts/run-fuzzers.sh)" OFF)
option(PROFTRACE_INSTALL "Install rules (headers, library, tool, package configuration)" ${PROJECT_IS_TOP_LEVEL})
set(PROFTRACE_SANITIZE "" CACHE STRING "Build everything with -fsanitize=<list> (e.g. thread, or address,undefined)")
set_property(CACHE PROFTRACE_WITH_CUDA PROPERTY STRINGS ON OFF AUTO)
set_property(CACHE PROFTRACE_WITH_NVTX PROPERTY STRINGS ON OFF AUTO)
set_property(CACHE PROFTRACE_WITH_OPENMP PROPERTY STRINGS ON OFF AUTO)
set_property(CACHE PROFTRACE_WITH_OTF2 PROPERTY STRINGS ON OFF AUTO)
set_property(CACHE PROFTRACE_OVERFLOW_POLICY PROPERTY STRINGS drop block drop_oldest)

macro(proftrace_bool out value)
  if(${value})
    set(${out} 1)
  else()
    set(${out} 0)
  endif()
endmacro()

proftrace_bool(PROFTRACE_ENABLED_01 PROFTRACE_ENABLED)
if(NOT PROFTRACE_ENABLED)
  foreach(part TESTS TOOLS BENCH FUZZERS)
    if(PROFTRACE_BUILD_${part})
      message(FATAL_ERROR "proftrace: PROFTRACE_BUILD_${part} needs PROFTRACE_ENABLED=ON: a zero-cost build has no recorder")
    endif()
  endforeach()
endif()
proftrace_bool(PROFTRACE_WITH_CPU_RANGES_01 PROFTRACE_WITH_CPU_RANGES)
proftrace_bool(PROFTRACE_WITH_FLOPS_01 PROFTRACE_WITH_FLOPS)
proftrace_bool(PROFTRACE_WITH_MEMORY_01 PROFTRACE_WITH_MEMORY)

# The CUDA collector (CUPTI), built when the toolkit is found (AUTO) or
# required (ON). Only the toolkit's headers are used: libcupti and libcudart
# are opened at run time, so a binary built with it starts without a driver
# or any CUDA library.
set(PROFTRACE_WITH_CUDA_01 0)
set(PROFTRACE_CUDA_TOOLKIT_FOUND FALSE)
if(NOT PROFTRACE_WITH_CUDA STREQUAL "OFF" AND PROFTRACE_ENABLED)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cupti AND TARGET CUDA::cudart)
    set(PROFTRACE_CUDA_TOOLKIT_FOUND TRUE)
    set(PROFTRACE_WITH_CUDA_01 1)
    message(STATUS "proftrace: CUDA toolkit ${CUDAToolkit_VERSION} found; the CUDA collector is built")
  elseif(PROFTRACE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "proftrace: PROFTRACE_WITH_CUDA=ON but no CUDA toolkit with CUPTI was found")
  endif()
endif()

# NVTX3 (header-only, in the toolkit) rides on the CUDA collector: the
# session's CUDA activity turns its ranges on.
set(PROFTRACE_WITH_NVTX_01 0)
if(PROFTRACE_WITH_NVTX STREQUAL "ON" AND NOT PROFTRACE_WITH_CUDA_01 AND PROFTRACE_ENABLED)
  message(FATAL_ERROR "proftrace: PROFTRACE_WITH_NVTX=ON needs the CUDA collector (PROFTRACE_WITH_CUDA and a toolkit)")
elseif(NOT PROFTRACE_WITH_NVTX STREQUAL "OFF" AND PROFTRACE_WITH_CUDA_01)
  if(NOT TARGET CUDA::nvtx3)
    message(FATAL_ERROR "proftrace: the CUDA toolkit has no NVTX3 headers (CUDA::nvtx3); set PROFTRACE_WITH_NVTX=OFF")
  endif()
  set(PROFTRACE_WITH_NVTX_01 1)
endif()

# MPI (OpenMPI from Debian, or any MPI CMake's FindMPI finds): the library
# links it only when asked, so that no one gets MPI by taking proftrace.
set(PROFTRACE_WITH_MPI_01 0)
if(PROFTRACE_WITH_MPI AND PROFTRACE_ENABLED)
  find_package(MPI COMPONENTS CXX)
  if(NOT MPI_CXX_FOUND)
    message(FATAL_ERROR "proftrace: PROFTRACE_WITH_MPI=ON but no MPI was found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  endif()
  set(PROFTRACE_WITH_MPI_01 1)
endif()

# perf_event_open is Linux's: elsewhere the counters collector cannot be built.
set(PROFTRACE_WITH_COUNTERS_01 0)
if(PROFTRACE_WITH_COUNTERS AND PROFTRACE_ENABLED)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    message(FATAL_ERROR "proftrace: PROFTRACE_WITH_COUNTERS=ON needs Linux (perf_event_open)")
  endif()
  set(PROFTRACE_WITH_COUNTERS_01 1)
endif()

# OMPT's header (omp-tools.h) is all the OpenMP collector needs to build: it
# links no OpenMP runtime. The program's runtime loads the tool (LLVM's
# libomp does; GCC's libgomp has no OMPT, which a session then says). GCC
# does not ship the header, so LLVM's copies are looked for too.
set(PROFTRACE_WITH_OPENMP_01 0)
if(NOT PROFTRACE_WITH_OPENMP STREQUAL "OFF" AND PROFTRACE_ENABLED)
  file(GLOB proftrace_llvm_omp_dirs /usr/lib/llvm-*/lib/clang/*/include /usr/lib/llvm-*/include)
  find_path(PROFTRACE_OMP_TOOLS_INCLUDE_DIR omp-tools.h HINTS ${proftrace_llvm_omp_dirs}
            DOC "Directory of OMPT's omp-tools.h")
  if(PROFTRACE_OMP_TOOLS_INCLUDE_DIR)
    set(PROFTRACE_WITH_OPENMP_01 1)
    message(STATUS "proftrace: omp-tools.h found in ${PROFTRACE_OMP_TOOLS_INCLUDE_DIR}; the OpenMP collector is built")
  elseif(PROFTRACE_WITH_OPENMP STREQUAL "ON")
    message(FATAL_ERROR "proftrace: PROFTRACE_WITH_OPENMP=ON but no omp-tools.h was found (Debian: apt-get install libomp-dev)")
  endif()
endif()

# OTF2 (the Score-P trace format Vampir and Scalasca read) through the
# reference library, found by pkg-config (Debian: libotf2-trace-dev). Without
# it an export to .otf2 throws, naming the package and this option.
set(PROFTRACE_WITH_OTF2_01 0)
if(NOT PROFTRACE_WITH_OTF2 STREQUAL "OFF" AND PROFTRACE_ENABLED)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(PROFTRACE_OTF2 QUIET IMPORTED_TARGET otf2)
  endif()
  if(PROFTRACE_OTF2_FOUND)
    set(PROFTRACE_WITH_OTF2_01 1)
    message(STATUS "proftrace: libotf2 ${PROFTRACE_OTF2_VERSION} found; .otf2 archives are written")
  elseif(PROFTRACE_WITH_OTF2 STREQUAL "ON")
    message(FATAL_ERROR "proftrace: PROFTRACE_WITH_OTF2=ON but pkg-config finds no otf2 (Debian: apt-get install libotf2-trace-dev)")
  endif()
endif()

if(PROFTRACE_OVERFLOW_POLICY STREQUAL "drop")
  set(PROFTRACE_OVERFLOW_POLICY_01 0)
elseif(PROFTRACE_OVERFLOW_POLICY STREQUAL "block")
  set(PROFTRACE_OVERFLOW_POLICY_01 1)
elseif(PROFTRACE_OVERFLOW_POLICY STREQUAL "drop_oldest")
  set(PROFTRACE_OVERFLOW_POLICY_01 2)
else()
  message(FATAL_ERROR "PROFTRACE_OVERFLOW_POLICY must be drop, block or drop_oldest")
endif()

set(PROFTRACE_PUBLIC_DEFINITIONS
  PROFTRACE_ENABLED=${PROFTRACE_ENABLED_01}
  PROFTRACE_WITH_CPU_RANGES=${PROFTRACE_WITH_CPU_RANGES_01}
  PROFTRACE_WITH_MEMORY=${PROFTRACE_WITH_MEMORY_01}
  PROFTRACE_WITH_FLOPS=${PROFTRACE_WITH_FLOPS_01}
  PROFTRACE_WITH_CUDA=${PROFTRACE_WITH_CUDA_01}
  PROFTRACE_WITH_NVTX=${PROFTRACE_WITH_NVTX_01}
  PROFTRACE_WITH_MPI=${PROFTRACE_WITH_MPI_01}
  PROFTRACE_WITH_COUNTERS=${PROFTRACE_WITH_COUNTERS_01}
  PROFTRACE_WITH_OPENMP=${PROFTRACE_WITH_OPENMP_01}
  PROFTRACE_WITH_OTF2=${PROFTRACE_WITH_OTF2_01}
  PROFTRACE_OVERFLOW_POLICY=${PROFTRACE_OVERFLOW_POLICY_01}
  PROFTRACE_RING_EVENTS=${PROFTRACE_RING_EVENTS})

set(PROFTRACE_WARNING_FLAGS -Wall -Wextra -Wundef)

function(proftrace_warnings target)
  target_compile_options(${target} PRIVATE ${PROFTRACE_WARNING_FLAGS})
endfunction()

if(PROFTRACE_SANITIZE)
  add_compile_options(-fsanitize=${PROFTRACE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${PROFTRACE_SANITIZE})
  if(PROFTRACE_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # The drop_oldest floor uses fences TSan cannot model; the slots it
    # guards are atomics, so TSan still checks every access.
    add_compile_options(-Wno-tsan)
  endif()
endif()

# GCC up to 13 and LLVM up to 16 ship a LeakSanitizer whose __tls_get_addr
# interceptor takes a malloc'd dynamic TLS block at offset 16 of a page for a
# pre-2.25 glibc header and reads a bogus range from it: by chance, the leak
# check at exit then dies with "Tracer caught signal 11" though nothing leaked
# (google/sanitizers#1322; seen once in CI on env_config). Called at the end
# of a folder's tests: every one of them runs without that interceptor under
# AddressSanitizer. Our own thread-locals are static TLS, which LeakSanitizer
# still scans.
function(proftrace_sanitizer_test_environment)
  if(PROFTRACE_SANITIZE MATCHES "address")
    get_property(folder_tests DIRECTORY PROPERTY TESTS)
    if(folder_tests)
      set_property(TEST ${folder_tests} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=intercept_tls_get_addr=0")
    endif()
  endif()
endfunction()
