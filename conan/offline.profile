# Builds proftrace with Conan 2 from these sources and this machine's
# packages, with no remote: Boost, doctest and CMake are what Debian
# installed (scripts/setup.sh), declared as provided by the platform.
#   conan create . -pr:a conan/offline.profile
[settings]
os=Linux
arch=x86_64
compiler=gcc
compiler.version=12
compiler.libcxx=libstdc++11
compiler.cppstd=20
build_type=Release

[platform_requires]
boost/1.81.0
doctest/2.4.9

[platform_tool_requires]
cmake/3.25.1
