"""Conan 2 recipe for proftrace: a static library with compile-time switches.

    conan create . -pr:a conan/offline.profile --build=missing   # offline, from these sources

The options map one to one onto the CMake switches and onto the definitions
consumers get (package_info). Consumers use proftrace's own CMake package
(find_package(proftrace) -> proftrace::proftrace), which finds Boost and
Threads. with_cuda needs the CUDA toolkit to build the package, not to
consume it: the library opens libcupti and libcudart at run time.
"""
import os

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load
import re


class ProftraceConan(ConanFile):
    name = "proftrace"
    description = "Compile-time-configurable instrumentation macros for HPC and GPU code, with Kineto-layout traces"
    license = "proprietary"
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "shared": [False],        # a static library only: the rings and the flusher are per process
        "fPIC": [True, False],
        "enabled": [True, False],    # PROFTRACE_ENABLED: False compiles every macro out
        "with_cuda": [True, False],  # PROFTRACE_WITH_CUDA (and NVTX with it): needs the CUDA toolkit
        "with_mpi": [True, False],   # PROFTRACE_WITH_MPI: ranks and clock alignment from the system's MPI
        "with_openmp": [True, False],  # PROFTRACE_WITH_OPENMP: the OMPT collector (needs omp-tools.h)
    }
    default_options = {"shared": False, "fPIC": True, "enabled": True, "with_cuda": False, "with_mpi": False,
                       "with_openmp": False}
    exports_sources = "CMakeLists.txt", "cmake/*", "include/*", "lib/*", "tools/*", "fortran/*", "LICENSE*"

    def set_version(self):
        text = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        self.version = re.search(r"project\(proftrace VERSION ([\d.]+)", text).group(1)

    def validate(self):
        if str(self.settings.compiler.get_safe("cppstd", "20")).replace("gnu", "") not in ("20", "23"):
            raise ConanInvalidConfiguration("proftrace needs C++20")

    def requirements(self):
        if self.options.enabled:  # a zero-cost build (enabled=False) links no Boost
            self.requires("boost/1.81.0", transitive_headers=False)

    def build_requirements(self):
        self.tool_requires("cmake/[>=3.22]")

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["PROFTRACE_ENABLED"] = bool(self.options.enabled)
        tc.cache_variables["PROFTRACE_WITH_CUDA"] = "ON" if self.options.with_cuda else "OFF"
        tc.cache_variables["PROFTRACE_WITH_MPI"] = bool(self.options.with_mpi)
        tc.cache_variables["PROFTRACE_WITH_COUNTERS"] = self.settings.os == "Linux"
        tc.cache_variables["PROFTRACE_WITH_OPENMP"] = "ON" if self.options.with_openmp else "OFF"
        # No .otf2 export: the recipe takes no libotf2 (Conan Center has none); an export to .otf2 throws, naming it.
        tc.cache_variables["PROFTRACE_WITH_OTF2"] = "OFF"
        tc.cache_variables["PROFTRACE_BUILD_TESTS"] = False
        tc.cache_variables["PROFTRACE_BUILD_EXAMPLES"] = False
        tc.cache_variables["PROFTRACE_BUILD_BENCH"] = False
        tc.cache_variables["PROFTRACE_BUILD_TOOLS"] = bool(self.options.enabled)  # the tools need the recorder
        tc.cache_variables["PROFTRACE_INSTALL"] = True
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()
        copy(self, "LICENSE*", self.source_folder, os.path.join(self.package_folder, "licenses"))

    def package_info(self):
        # The package's own proftraceConfig.cmake is what consumers load.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = [os.path.join("lib", "cmake", "proftrace")]
        self.cpp_info.libs = ["proftrace"]
        self.cpp_info.system_libs = ["pthread", "dl"]
        enabled = 1 if self.options.enabled else 0
        cuda = 1 if self.options.with_cuda and enabled else 0  # a zero-cost build compiles no collector
        self.cpp_info.defines = [
            f"PROFTRACE_ENABLED={enabled}",
            "PROFTRACE_WITH_CPU_RANGES=1", "PROFTRACE_WITH_MEMORY=1", "PROFTRACE_WITH_FLOPS=1",
            f"PROFTRACE_WITH_CUDA={cuda}", f"PROFTRACE_WITH_NVTX={cuda}",
            f"PROFTRACE_WITH_MPI={1 if self.options.with_mpi and enabled else 0}",
            f"PROFTRACE_WITH_COUNTERS={1 if self.settings.os == 'Linux' and enabled else 0}",
            f"PROFTRACE_WITH_OPENMP={1 if self.options.with_openmp and enabled else 0}",
            "PROFTRACE_WITH_OTF2=0",
            "PROFTRACE_OVERFLOW_POLICY=0", "PROFTRACE_RING_EVENTS=32768",
        ]
        self.buildenv_info.prepend_path("PATH", os.path.join(self.package_folder, "bin"))
