// Helpers shared by the runtime test suites: temporary directories, warning
// capture, and reading a trace back (plain, gzip or zstd) as JSON.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <boost/iostreams/copy.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json.hpp>
#include <coroutine>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <proftrace/warnings.hpp>

namespace test_support {

// A coroutine that runs at once and destroys itself when it finishes (the
// tests' scopes that end on another thread: an awaiter resumes it there).
struct detached {
  struct promise_type {
    detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

// A fresh directory removed at scope exit.
struct temp_dir {
  std::filesystem::path path;
  explicit temp_dir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("proftrace-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

// Collects warnings while alive (the flusher thread may emit them too).
// The process may write at most `bytes` per file while alive (SIGXFSZ
// ignored, so writes past it fail with EFBIG as on a full disk).
struct file_size_limit {
  struct rlimit saved {};
  void (*saved_handler)(int) = nullptr;
  explicit file_size_limit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    saved_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, saved_handler);
  }
};

struct warning_capture {
  std::vector<std::string> seen;
  std::mutex mutex;
  proftrace::warning_handler previous;
  warning_capture() {
    previous = proftrace::set_warning_handler([this](std::string_view m) {
      std::lock_guard lock(mutex);
      seen.emplace_back(m);
    });
  }
  ~warning_capture() { proftrace::set_warning_handler(std::move(previous)); }
  bool contains(std::string_view needle) {
    std::lock_guard lock(mutex);
    for (auto& s : seen)
      if (s.find(needle) != std::string::npos) return true;
    return false;
  }
};

inline std::string read_text(const std::filesystem::path& p) {
  namespace io = boost::iostreams;
  std::ifstream file(p, std::ios::binary);
  io::filtering_istream in;
  const std::string name = p.filename().string();
  if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") in.push(io::gzip_decompressor());
  else if (name.size() > 4 && name.substr(name.size() - 4) == ".zst") in.push(io::zstd_decompressor());
  in.push(file);
  std::ostringstream out;
  io::copy(in, out);
  return out.str();
}

inline boost::json::object read_trace(const std::filesystem::path& p) {
  return boost::json::parse(read_text(p)).as_object();
}

inline std::vector<boost::json::object> events_named(const boost::json::object& trace, std::string_view name) {
  std::vector<boost::json::object> out;
  for (auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.contains("name") && o.at("name").as_string() == name) out.push_back(o);
  }
  return out;
}

inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace test_support
