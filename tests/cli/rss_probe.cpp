// rss_probe OUT COMMAND [ARGS...]: runs COMMAND and writes "PEAK_KIB STATUS"
// to OUT, PEAK_KIB being COMMAND's own peak resident memory.
//
// A test that forks and execs a command directly reads, in ru_maxrss, the
// test's own resident pages too: the child held them until its exec. Run
// through this probe, the command's process is forked from the probe's few
// hundred KiB instead.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: rss_probe OUT COMMAND [ARGS...]\n");
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    ::execv(argv[2], argv + 2);
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid) return 2;
  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) return 2;
  std::fprintf(out, "%ld %d\n", usage.ru_maxrss, status);
  return std::fclose(out) == 0 ? 0 : 2;
}
