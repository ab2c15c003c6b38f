// Internal: libcupti and libcudart, opened with dlopen at first use. A
// program built with the CUDA collector then neither needs them to start
// nor loads them until a session or a helper asks for CUDA, so it runs on a
// machine with no CUDA installed at all.
//
// Where a library is looked for, in order:
//   PROFTRACE_CUDA_LIBRARY_DIRS set (directories, ':'-separated): only there;
//   otherwise its soname (libcupti.so.13, then libcupti.so) through the
//   dynamic loader's own search, then the build's toolkit directories.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "proftrace/config.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class shared_library {
 public:
  // Opens the first candidate that loads; never closed (CUPTI calls back
  // until exit). `name` is what a reason calls the library.
  static shared_library open(std::string_view name, const std::vector<std::string>& candidates,
                             std::string_view searched = {});

  bool loaded() const noexcept { return handle_ != nullptr; }
  // Why it did not load: "libcupti.so.13 not found (dlopen: ...)".
  const std::string& error() const noexcept { return error_; }
  // The candidate that loaded.
  const std::string& path() const noexcept { return path_; }
  // The symbol's address; null, with `why` set, where the library did not
  // load or lacks it.
  void* symbol(const char* symbol_name, std::string& why) const;

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
  std::string error_;
};

// The file names to try for `stem` ("libcupti") of toolkit major `major`:
// in each of `env_dirs` if that is non-empty, else the sonames themselves
// and then in each of `fallback_dirs` (both ':'-separated).
std::vector<std::string> cuda_library_candidates(std::string_view stem, std::string_view major,
                                                 std::string_view env_dirs, std::string_view fallback_dirs);

// `symbol` as a function pointer of type F; null, with `why` set, where absent.
template <class F>
F library_function(const shared_library& lib, const char* symbol, std::string& why) {
  return reinterpret_cast<F>(lib.symbol(symbol, why));
}

// The name a call to `fn` links to: the CUDA headers map some functions onto
// versioned symbols by macro (cudaGetDeviceProperties_v2 in CUDA 12).
#define PROFTRACE_DETAIL_LINKED_NAME(fn) PROFTRACE_DETAIL_LINKED_NAME_(fn)
#define PROFTRACE_DETAIL_LINKED_NAME_(fn) #fn

// Binds `field` to `symbol` in `lib`, checked against the header's
// declaration (Declared comes from decltype: nothing references the symbol).
template <class Declared, class Field>
bool bind_function(Field& field, const shared_library& lib, const char* symbol, std::string& why) {
  static_assert(std::is_same_v<Declared, Field>, "the table's type differs from the header's declaration");
  field = library_function<Field>(lib, symbol, why);
  return field != nullptr;
}
// bind_function for the CUDA function `fn`, by its linked name.
#define PROFTRACE_DETAIL_BIND(field, lib, fn) \
  ::proftrace::detail::bind_function<decltype(&fn)>(field, lib, PROFTRACE_DETAIL_LINKED_NAME(fn), why)

// Opened once, on first call, thread-safe.
const shared_library& cupti_library();
const shared_library& cudart_library();

}  // namespace proftrace::detail
