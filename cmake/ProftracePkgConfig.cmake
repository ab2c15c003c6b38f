# pkg-config modules for builds without CMake (Makefiles), installed beside
# the CMake package: one per target a program can name, in the enabled and
# the zero-cost install alike.
#
#   c++ app.cpp $(pkg-config --cflags --libs proftrace)
#   mpicxx app.cpp $(pkg-config --cflags --libs proftrace-mpi-calls)
#   gfortran app.f90 $(pkg-config --cflags --libs proftrace-fortran)
#
# Every library is a static archive, so each module's Libs carries what its
# archive needs (Boost, MPI, the C++ runtime for C and Fortran links). The
# modules find their prefix from their own place (${pcfiledir}).
include(GNUInstallDirs)
set(proftrace_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH proftrace_pc_to_prefix /${proftrace_pc_dir} /)
string(REGEX REPLACE "/$" "" proftrace_pc_to_prefix "${proftrace_pc_to_prefix}")

list(TRANSFORM PROFTRACE_PUBLIC_DEFINITIONS PREPEND -D OUTPUT_VARIABLE proftrace_pc_definitions)
list(JOIN proftrace_pc_definitions " " proftrace_pc_definitions)

# proftrace_pc(MODULE DESCRIPTION REQUIRES CFLAGS LIBS): LIBS may hold generator expressions.
function(proftrace_pc module description requires cflags libs)
  set(text "prefix=\${pcfiledir}/${proftrace_pc_to_prefix}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}

Name: ${module}
Description: ${description}
Version: ${PROJECT_VERSION}
Requires: ${requires}
Cflags: ${cflags}
Libs: ${libs}
")
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc CONTENT "${text}")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc DESTINATION ${proftrace_pc_dir})
endfunction()

# A component's archive, taken whole through its anchor (CMakeLists.txt's proftrace_component).
function(proftrace_pc_component_libs out name anchor)
  set(${out} "-L\${libdir} -Wl,-u,${anchor} -lproftrace_${name}" PARENT_SCOPE)
endfunction()

if(PROFTRACE_ENABLED)
  # A C or Fortran program links the C++ archive, so the C++ runtime too.
  list(TRANSFORM CMAKE_DL_LIBS PREPEND -l OUTPUT_VARIABLE proftrace_pc_dl)
  list(JOIN proftrace_pc_dl " " proftrace_pc_dl)
  set(proftrace_pc_libs "-L\${libdir} -lproftrace $<TARGET_FILE:Boost::json> $<TARGET_FILE:Boost::iostreams>")
  if(PROFTRACE_WITH_OTF2_01)
    list(JOIN PROFTRACE_OTF2_LDFLAGS " " proftrace_pc_otf2)
    string(APPEND proftrace_pc_libs " ${proftrace_pc_otf2}")
  endif()
  string(APPEND proftrace_pc_libs " -pthread ${proftrace_pc_dl} -lstdc++ -lm")
  proftrace_pc_component_libs(proftrace_pc_new_hook new_hook proftrace_new_hook_component)
  if(PROFTRACE_WITH_MPI_01)
    proftrace_pc_component_libs(proftrace_pc_mpi mpi proftrace_mpi_component)
    list(JOIN MPI_CXX_LIBRARIES " " proftrace_pc_mpi_libraries)
    string(APPEND proftrace_pc_mpi " ${MPI_CXX_LINK_FLAGS} ${proftrace_pc_mpi_libraries}")
    proftrace_pc_component_libs(proftrace_pc_mpi_calls mpi_calls proftrace_mpi_calls_component)
  endif()
else()
  # Zero-cost: the helpers' archive, from which a program that calls none
  # of them (every C and Fortran program) takes nothing; components are empty.
  set(proftrace_pc_libs "-L\${libdir} -lproftrace")
  set(proftrace_pc_new_hook "")
  set(proftrace_pc_mpi "")
  set(proftrace_pc_mpi_calls "")
endif()

proftrace_pc(proftrace "proftrace: instrumentation macros, sessions and traces" ""
             "-I\${includedir} ${proftrace_pc_definitions}" "${proftrace_pc_libs}")
proftrace_pc(proftrace-new-hook "proftrace: every C++ allocation seen by profile_memory" proftrace ""
             "${proftrace_pc_new_hook}")
if(PROFTRACE_WITH_MPI_01 OR NOT PROFTRACE_ENABLED)
  proftrace_pc(proftrace-mpi "proftrace: ranks from MPI and clocks aligned against rank 0" proftrace ""
               "${proftrace_pc_mpi}")
  proftrace_pc(proftrace-mpi-calls "proftrace: MPI calls recorded as scopes (PMPI)" proftrace-mpi ""
               "${proftrace_pc_mpi_calls}")
endif()
if(TARGET proftrace_fortran)
  proftrace_pc(proftrace-fortran "proftrace: the Fortran module" proftrace
               "-I\${includedir}/proftrace/fortran" "-L\${libdir} -lproftrace_fortran")
endif()
