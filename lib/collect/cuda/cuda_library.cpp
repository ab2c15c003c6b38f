#include "cuda_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

// The build's toolkit, baked in by CMake (CMakeLists.txt): its major version
// names the sonames, its directories are the last resort.
#ifndef PROFTRACE_CUDA_MAJOR
#define PROFTRACE_CUDA_MAJOR ""
#endif
#ifndef PROFTRACE_CUPTI_DIRS
#define PROFTRACE_CUPTI_DIRS ""
#endif
#ifndef PROFTRACE_CUDART_DIRS
#define PROFTRACE_CUDART_DIRS ""
#endif

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace {

std::vector<std::string_view> split_dirs(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const auto colon = list.find(':');
    const std::string_view dir = list.substr(0, colon);
    if (!dir.empty()) out.push_back(dir);
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return out;
}

std::string env_dirs() {
  const char* v = std::getenv("PROFTRACE_CUDA_LIBRARY_DIRS");
  return v ? v : "";
}

shared_library open_cuda_library(std::string_view stem, std::string_view fallback_dirs) {
  const std::string env = env_dirs();
  const std::string_view major = PROFTRACE_CUDA_MAJOR;
  // Appended piece by piece: GCC 12's -Wrestrict misfires at -O3 on "text" + std::string.
  std::string soname(stem);
  soname += ".so";
  if (!major.empty()) soname.append(".").append(major);
  std::string searched = "searched ";
  if (!env.empty()) {
    searched.append("PROFTRACE_CUDA_LIBRARY_DIRS=").append(env);
  } else {
    searched.append("the dynamic loader's path");
    if (!fallback_dirs.empty()) searched.append(" and ").append(fallback_dirs);
  }
  return shared_library::open(soname, cuda_library_candidates(stem, major, env, fallback_dirs), searched);
}

}  // namespace

shared_library shared_library::open(std::string_view name, const std::vector<std::string>& candidates,
                                    std::string_view searched) {
  shared_library lib;
  lib.name_ = name;
  std::string first_error, telling_error;
  for (const std::string& candidate : candidates) {
    if (void* h = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lib.handle_ = h;
      lib.path_ = candidate;
      return lib;
    }
    const char* e = ::dlerror();
    const std::string text = e ? e : "unknown error";
    if (first_error.empty()) first_error = text;
    // A file that exists and fails to load (wrong architecture, a missing
    // dependency) says more than the candidates that are simply absent.
    if (telling_error.empty() && text.find("No such file or directory") == std::string::npos) telling_error = text;
  }
  lib.error_ = lib.name_ + " not found (dlopen: " +
               (telling_error.empty() ? (first_error.empty() ? "nothing to try" : first_error) : telling_error) + ")";
  if (!searched.empty()) lib.error_ += "; " + std::string(searched);
  return lib;
}

void* shared_library::symbol(const char* symbol_name, std::string& why) const {
  if (!handle_) {
    why = error_;
    return nullptr;
  }
  ::dlerror();
  void* p = ::dlsym(handle_, symbol_name);
  if (!p) {
    const char* e = ::dlerror();
    why = name_ + " (" + path_ + ") has no symbol " + symbol_name + " (dlsym: " + (e ? e : "null address") + ")";
  }
  return p;
}

std::vector<std::string> cuda_library_candidates(std::string_view stem, std::string_view major,
                                                 std::string_view env, std::string_view fallback_dirs) {
  std::vector<std::string> names;
  if (!major.empty()) names.push_back(std::string(stem) + ".so." + std::string(major));
  names.push_back(std::string(stem) + ".so");
  std::vector<std::string> out;
  const auto in_dirs = [&](std::string_view dirs) {
    for (std::string_view dir : split_dirs(dirs))
      for (const std::string& n : names) out.push_back(std::string(dir) + "/" + n);
  };
  if (!env.empty()) {
    in_dirs(env);
    return out;
  }
  out = names;
  in_dirs(fallback_dirs);
  return out;
}

const shared_library& cupti_library() {
  static const shared_library lib = open_cuda_library("libcupti", PROFTRACE_CUPTI_DIRS);
  return lib;
}

const shared_library& cudart_library() {
  static const shared_library lib = open_cuda_library("libcudart", PROFTRACE_CUDART_DIRS);
  return lib;
}

}  // namespace proftrace::detail
