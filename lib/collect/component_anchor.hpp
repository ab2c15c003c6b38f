// Internal: the symbol by which a program's link takes an opt-in
// component's object whole (CMakeLists.txt's proftrace_component, which
// names it and asks for it with -u, from CMake and from pkg-config).
#pragma once

#define PROFTRACE_DEFINE_COMPONENT_ANCHOR() extern "C" const int PROFTRACE_COMPONENT_ANCHOR = 0
