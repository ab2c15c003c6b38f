// A tiny proftrace user for tests/build/link_mismatch/check_link_mismatch.cmake.
// Built with the library's own collector selection it links and runs; built
// with another selection (for example -DPROFTRACE_WITH_MEMORY=1) it names
// symbols in another ABI namespace (abi_c1_m1_...) and must fail to link.
#include <proftrace/macros.hpp>
#include <proftrace/profile.hpp>

#include <cstdio>

namespace {
int work(int n) {
  PROF_SCOPE("link_mismatch.work");
  int s = 0;
  for (int i = 0; i < n; ++i) s += i;
  return s;
}
}  // namespace

int main() {
  proftrace::profile p;
  p.start();
  const int s = work(100);
  p.stop();
  std::printf("link_mismatch: sum %d, activities 0x%x\n", s, static_cast<unsigned>(p.activities().bits()));
  return s == 4950 ? 0 : 1;
}
