// The opt-in operator new/delete hook: linked into a program by
// `target_link_libraries(app PRIVATE proftrace::new_hook)`, it replaces the
// global allocation functions. While a session records with profile_memory,
// every allocation and free they make is a host-memory PROF_ALLOC/PROF_FREE
// (with the thread's PROF_MEMORY_CATEGORY); otherwise each call costs one
// relaxed load on top of malloc/free.
//
// The malloc family is not hooked: glibc has had no allocation hooks since
// 2.34, and interposing malloc itself would fight the sanitizers' and any
// other allocator's own interposition. A program with its own allocator
// reports it with PROF_ALLOC/PROF_FREE.
#include <cstdlib>
#include <new>

#include "proftrace/detail/recorder.hpp"
#include "collect/component_anchor.hpp"

PROFTRACE_DEFINE_COMPONENT_ANCHOR();

namespace {

using namespace proftrace::detail;

// Set while this thread records an allocation, so that the recording itself
// (a thread's first event allocates its ring) is never recorded.
constinit thread_local bool in_hook = false;

PROFTRACE_ALWAYS_INLINE bool should_record() noexcept {
  return recording_memory() && !in_hook && this_thread_in_profiler == 0;
}

void note_alloc(void* p, std::size_t n) noexcept {
  if (!should_record()) return;
  in_hook = true;
  record_alloc(p, static_cast<std::int64_t>(n));
  in_hook = false;
}

void note_free(void* p) noexcept {
  if (p == nullptr || !should_record()) return;
  in_hook = true;
  record_free(p);
  in_hook = false;
}

// As the standard library's: retry through the new_handler, else bad_alloc.
void* allocate(std::size_t n) {
  if (n == 0) n = 1;
  for (;;) {
    if (void* p = std::malloc(n)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

void* allocate(std::size_t n, std::align_val_t alignment) {
  const auto a = static_cast<std::size_t>(alignment);
  std::size_t rounded = n == 0 ? a : (n + a - 1) / a * a;  // aligned_alloc wants a multiple of the alignment
  if (rounded < n) throw std::bad_alloc();
  for (;;) {
    if (void* p = std::aligned_alloc(a, rounded)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

template <class... Alignment>
void* hooked_new(std::size_t n, Alignment... alignment) {
  void* p = allocate(n, alignment...);
  note_alloc(p, n);
  return p;
}

template <class... Alignment>
void* hooked_new_nothrow(std::size_t n, Alignment... alignment) noexcept {
  try {
    return hooked_new(n, alignment...);
  } catch (...) {
    return nullptr;
  }
}

void hooked_delete(void* p) noexcept {
  note_free(p);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return hooked_new(n); }
void* operator new[](std::size_t n) { return hooked_new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return hooked_new_nothrow(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return hooked_new_nothrow(n); }
void* operator new(std::size_t n, std::align_val_t a) { return hooked_new(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return hooked_new(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return hooked_new_nothrow(n, a); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return hooked_new_nothrow(n, a); }

void operator delete(void* p) noexcept { hooked_delete(p); }
void operator delete[](void* p) noexcept { hooked_delete(p); }
void operator delete(void* p, std::size_t) noexcept { hooked_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { hooked_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { hooked_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { hooked_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { hooked_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { hooked_delete(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { hooked_delete(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { hooked_delete(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { hooked_delete(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { hooked_delete(p); }
