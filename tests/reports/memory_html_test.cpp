// The memory timeline page loads in headless Chromium: the DOM it builds
// holds the inline SVG with one series per category that held memory and the
// peak marker, and the page fetched nothing.
#include <doctest/doctest.h>

#include <algorithm>

#include <proftrace/proftrace.hpp>

#include <cstdio>
#include <regex>
#include <thread>

#include "test_support.hpp"

namespace {
char arena[8][64];

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run: " << command);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

std::string dump_dom(const std::string& chromium, const std::filesystem::path& profile_dir, const std::filesystem::path& page) {
  return run("'" + chromium + "' --headless --no-sandbox --disable-gpu --user-data-dir='" + profile_dir.string() +
             "' --dump-dom 'file://" + page.string() + "' 2>/dev/null");
}

std::size_t count(const std::string& text, const std::regex& re) {
  return static_cast<std::size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}
}  // namespace

TEST_CASE("the HTML memory timeline loads in headless Chromium with one series per category") {
  const std::string chromium = PROFTRACE_CHROMIUM;
  REQUIRE_MESSAGE(!chromium.empty(), "Chromium was not found when configuring; scripts/setup.sh installs it");
  test_support::temp_dir out("html");

  using proftrace::memory_category;
  proftrace::profile p({.profile_memory = true});
  p.start();
  PROF_ALLOC(arena[0], 3 << 20, -1, memory_category::parameter);
  for (int i = 1; i <= 3; ++i) {
    PROF_ALLOC(arena[i], i << 20, -1, memory_category::activation);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  PROF_ALLOC(arena[4], 1 << 20, -1, memory_category::gradient);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 1; i <= 3; ++i) PROF_FREE(arena[i]);
  p.stop();
  const auto page = out.path / "memory.html";
  p.export_memory_timeline(page, "cpu");

  const std::string dom = run("'" + chromium + "' --headless --no-sandbox --disable-gpu --user-data-dir='" +
                              (out.path / "profile").string() + "' --dump-dom 'file://" + page.string() +
                              "' 2>/dev/null");
  REQUIRE_MESSAGE(dom.find("<svg") != std::string::npos, "Chromium did not render the page:\n" << dom.substr(0, 400));
  CHECK(count(dom, std::regex(R"(<path class="series")")) == 3);
  for (const char* c : {"PARAMETER", "ACTIVATION", "GRADIENT"})
    CHECK(dom.find(std::string("data-category=\"") + c + "\"") != std::string::npos);
  CHECK(dom.find("class=\"peak-marker\"") != std::string::npos);
  CHECK(dom.find("peak 10.00 MiB") != std::string::npos);  // 3 + 1 + 2 + 3 + 1 MiB
  CHECK(dom.find("Max memory allocated: 10.00 MiB") != std::string::npos);
  // Self-contained: nothing to fetch.
  const std::string html = test_support::read_text(page);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
}

TEST_CASE("a 300-step run's memory timeline loads in Chromium as a bounded envelope that follows the page's width") {
  const std::string chromium = PROFTRACE_CHROMIUM;
  REQUIRE_MESSAGE(!chromium.empty(), "Chromium was not found when configuring; scripts/setup.sh installs it");
  test_support::temp_dir out("html-long");

  using proftrace::memory_category;
  static char blocks[64][16];
  proftrace::profile p({.profile_memory = true, .overflow = proftrace::overflow_policy::block});
  p.start();
  PROF_ALLOC(blocks[0], 8 << 20, -1, memory_category::parameter);
  // Records at least 2 us apart: the timeline coalesces a microsecond's.
  const auto pause = [] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  for (int step = 0; step < 300; ++step) {
    // Activations pile up through a step and are freed at its end; step 150
    // also takes a short 64 MiB temporary.
    for (int i = 1; i < 60; ++i) PROF_ALLOC(blocks[i], 64 << 10, -1, memory_category::activation), pause();
    if (step == 150) {
      PROF_ALLOC(blocks[60], 64 << 20, -1, memory_category::temporary);
      pause();
      PROF_FREE(blocks[60]);
      pause();
    }
    for (int i = 1; i < 60; ++i) PROF_FREE(blocks[i]), pause();
  }
  p.stop();
  const auto page = out.path / "memory.html";
  p.export_memory_timeline(page, "cpu");

  const std::string dom = dump_dom(chromium, out.path / "profile", page);
  REQUIRE_MESSAGE(dom.find("<svg") != std::string::npos, "Chromium did not render the page:\n" << dom.substr(0, 400));
  CHECK(dom.find("width=\"100%\"") != std::string::npos);
  CHECK(dom.find("viewBox=\"0 0 1200 520\"") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex(R"re(data-columns="(\d+)")re")));
  const std::size_t columns = std::stoul(m[1].str());
  REQUIRE(std::regex_search(dom, m, std::regex(R"re(data-samples="(\d+)")re")));
  CHECK(std::stoul(m[1].str()) > columns);  // more samples than columns: an envelope
  CHECK(count(dom, std::regex(R"(<path class="series")")) == 3);
  // Found by hand: std::regex recurses per character, and a path's `d` is
  // tens of KB (libstdc++'s matcher overflowed the stack on it).
  for (std::size_t at = dom.find("<path class=\"series\""); at != std::string::npos;
       at = dom.find("<path class=\"series\"", at + 1)) {
    const std::size_t open = dom.find(" d=\"", at);
    REQUIRE(open != std::string::npos);
    const std::size_t close = dom.find('"', open + 4);
    REQUIRE(close != std::string::npos);
    const auto first = dom.begin() + static_cast<std::ptrdiff_t>(open + 4);
    const auto last = dom.begin() + static_cast<std::ptrdiff_t>(close);
    const auto points = static_cast<std::size_t>(std::count(first, last, 'M') + std::count(first, last, 'L'));
    CHECK(points <= 4 * columns);
  }
  // 8 MiB + 59 x 64 KiB + 64 MiB: the one short temporary is the peak.
  CHECK(dom.find("peak 75.69 MiB") != std::string::npos);
  CHECK(dom.find("Max memory allocated: 75.69 MiB") != std::string::npos);
}
