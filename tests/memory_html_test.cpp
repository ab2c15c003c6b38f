// The memory timeline page loads in headless Chromium: the DOM it builds
// holds the inline SVG with one series per category that held memory and the
// peak marker, and the page fetched nothing.
#include <doctest/doctest.h>

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
