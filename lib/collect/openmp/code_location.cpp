#include "code_location.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cxxabi.h>
#include <map>
#include <memory>
#include <mutex>

extern char** environ;

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
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

// "ns::f(int, char) const" -> "ns::f": the parameter list at the end goes.
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

// One `addr2line -a -i -f -C -e FILE` per object file, kept running: an
// address written to it answers in well under a millisecond, where starting
// it costs tens. Its answer is the address, then a (function, file:line)
// pair per inlined level, innermost first: the innermost names the
// construct's own function even where it was inlined. Each query is followed
// by 0x0, whose answer (an address line, "??", "??:0") marks where the
// first one ends. posix_spawn, not fork: no atfork handler (the flusher's)
// runs, nothing of this process is copied.
struct symbolizer {
  pid_t pid = -1;
  pid_t owner = -1;  // the process that started it (a forked child starts its own)
  int to = -1, from = -1;
  bool broken = false;
  std::string pending;

  bool start(const std::string& file) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return false;
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::string exe = file;
    char arg0[] = "addr2line", arg_a[] = "-a", arg_i[] = "-i", arg_f[] = "-f", arg_c[] = "-C", arg_e[] = "-e";
    char* argv[] = {arg0, arg_a, arg_i, arg_f, arg_c, arg_e, exe.data(), nullptr};
    const int rc = posix_spawnp(&pid, "addr2line", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      return false;
    }
    to = in[1];
    from = out[0];
    owner = getpid();
    return true;
  }

  // One line of its answer; false after 5 s without one (it is then not asked again).
  bool line(std::string& out) {
    for (;;) {
      if (const auto nl = pending.find('\n'); nl != std::string::npos) {
        out = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        return true;
      }
      pollfd p{from, POLLIN, 0};
      const int ready = poll(&p, 1, 5000);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return false;
      char buf[1024];
      const ssize_t n = read(from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      pending.append(buf, static_cast<std::size_t>(n));
    }
  }

  bool ask(std::uintptr_t offset, std::string& function, std::string& where) {
    if (broken || owner != getpid()) return false;
    char query[48];
    const int len = std::snprintf(query, sizeof query, "0x%zx\n0x0\n", static_cast<std::size_t>(offset));
    std::string header, more;
    bool ok = write(to, query, static_cast<std::size_t>(len)) == len && line(header) && header.rfind("0x", 0) == 0 &&
              line(function) && line(where);
    while (ok && (ok = line(more)) && more.rfind("0x", 0) != 0) {  // outer inlined levels, up to the mark's address
    }
    ok = ok && line(more) && line(more);  // the mark's "??" and "??:0"
    if (!ok) {
      broken = true;
      return false;
    }
    if (const auto end = where.find(' '); end != std::string::npos) where.resize(end);
    return true;
  }
};

std::mutex symbolizers_mutex;
std::map<std::string, symbolizer>& symbolizers() {
  static auto* m = new std::map<std::string, symbolizer>();  // its processes end with ours
  return *m;
}

bool ask_addr2line(const std::string& file, std::uintptr_t offset, std::string& function, std::string& where) {
  std::lock_guard lock(symbolizers_mutex);
  auto [it, fresh] = symbolizers().try_emplace(file);
  if ((fresh || it->second.owner != getpid()) && !it->second.broken) {
    it->second = symbolizer{};
    if (!it->second.start(file)) it->second.broken = true;
  }
  return it->second.ask(offset, function, where);
}

std::string object_file(const Dl_info& info) {
  std::string file = info.dli_fname ? info.dli_fname : "";
  if (file.empty() || file.find('/') == std::string::npos) {  // the main program, as the loader names it
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) file.assign(self, static_cast<std::size_t>(n));
  }
  return file;
}

}  // namespace

std::string source_line_of(const std::string& where) {
  // "??:0", "??:?": nothing known; "file.cpp:?", "file.cpp:0": a file
  // without a line (line tables missing), not worth a name's parentheses.
  if (where.empty() || where.find("??") != std::string::npos || where.ends_with(":0") || where.ends_with(":?"))
    return {};
  return base_name(where);
}

code_location locate_code(const void* address) {
  code_location out;
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", address);
    out.function = buf;
    return out;
  }
  // codeptr_ra is a return address: the call before it is the construct.
  const auto at = reinterpret_cast<std::uintptr_t>(address) - 1;
  const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  // A position-independent object's addresses are offsets from where it was
  // loaded; a fixed executable's are absolute.
  const auto* header = static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
  const bool relative = header != nullptr && header->e_type == ET_DYN;
  const std::string file = object_file(info);
  std::string function, where;
  const bool asked = ask_addr2line(file, relative ? at - base : at, function, where);
  if (!asked || function == "??") function = info.dli_sname ? demangled(info.dli_sname) : std::string();
  out.function = without_parameters(std::move(function));
  if (asked) out.location = source_line_of(where);
  if (out.function.empty() && out.location.empty()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "+0x%zx", static_cast<std::size_t>(at + 1 - base));
    out.function = base_name(file) + buf;
  }
  return out;
}

void warm_up_code_locations(const void* address) {
  (void)locate_code(address);  // a real address: addr2line reads the line tables now
}

bool is_outlined(const std::string& function) {
  return function.rfind(".omp_outlined", 0) == 0 || function.rfind("__omp_outlined", 0) == 0 ||
         function.rfind(".omp.", 0) == 0;
}

std::string describe_code(const code_location& c, const std::string& instead_of_outlined) {
  std::string function = c.function;
  if (is_outlined(function)) function = instead_of_outlined;
  if (c.location.empty()) return function.empty() ? "unknown" : function;
  return function.empty() ? c.location : function + " (" + c.location + ")";
}

}  // namespace proftrace::detail
