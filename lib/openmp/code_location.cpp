#include "openmp/code_location.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cxxabi.h>
#include <memory>

extern char** environ;

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {
namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

// addr2line's two lines for `offset` in `file`: the function, then file:line
// ("??" where it does not know). Empty when it cannot be run.
bool ask_addr2line(const std::string& file, std::uintptr_t offset, std::string& function, std::string& where) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char address[32];
  std::snprintf(address, sizeof address, "0x%zx", static_cast<std::size_t>(offset));
  std::string exe = file;
  char arg0[] = "addr2line", arg_f[] = "-f", arg_c[] = "-C", arg_e[] = "-e";
  char* argv[] = {arg0, arg_f, arg_c, arg_e, exe.data(), address, nullptr};
  pid_t pid = -1;
  // posix_spawn, not fork: no atfork handler (the flusher's) runs, and
  // nothing of this multithreaded process is copied.
  const int rc = posix_spawnp(&pid, "addr2line", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) text.append(buf, static_cast<std::size_t>(n));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(out[0]);
  if (rc != 0) return false;
  const auto nl = text.find('\n');
  if (nl == std::string::npos) return false;
  function = text.substr(0, nl);
  where = text.substr(nl + 1);
  if (const auto end = where.find_first_of(" \n"); end != std::string::npos) where.resize(end);
  return true;
}

// "ns::f(int, char) const" -> "ns::f": the outermost parameter list at the end goes.
std::string without_parameters(std::string name) {
  if (name.size() > 6 && name.compare(name.size() - 6, 6, " const") == 0) name.resize(name.size() - 6);
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    else if (name[i] == '(' && --depth == 0) {
      if (i > 0) name.resize(i);
      break;
    }
  }
  return name;
}

}  // namespace

std::string describe_code(const void* address) {
  if (address == nullptr) return "unknown";
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", address);
    return buf;
  }
  // codeptr_ra is a return address: the call before it is the construct.
  const auto at = reinterpret_cast<std::uintptr_t>(address) - 1;
  const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  // A position-independent object's addresses are offsets from where it was
  // loaded; a fixed executable's are absolute.
  const auto* header = static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
  const bool relative = header != nullptr && header->e_type == ET_DYN;
  std::string file = info.dli_fname;
  if (file.empty() || file.find('/') == std::string::npos) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) file.assign(self, static_cast<std::size_t>(n));
  }
  std::string function, where;
  const bool asked = ask_addr2line(file, relative ? at - base : at, function, where);
  if (!asked || function == "??") function = info.dli_sname ? demangled(info.dli_sname) : std::string();
  function = without_parameters(std::move(function));
  const bool has_line = asked && !where.empty() && where.find("??") == std::string::npos && where.find(":0") == std::string::npos;
  if (function.empty() && !has_line) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "+0x%zx", static_cast<std::size_t>(at + 1 - base));
    return base_name(file) + buf;
  }
  if (!has_line) return function;
  const std::string loc = base_name(where);
  return function.empty() ? loc : function + " (" + loc + ")";
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
