// kineto_json_reader, the reader of Kineto JSON text that the converter to
// Perfetto and `proftrace merge` share: every element and member whatever
// the chunking, the cut decided at the end wherever it falls, an element
// over the bound refused, a failing stream told apart from a cut, and
// kineto_json_text decompressing by suffix.
#include <doctest/doctest.h>

#include <boost/iostreams/filtering_stream.hpp>
#include <boost/json.hpp>

#include <fstream>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "kineto_json_sample.hpp"
#include "test_support.hpp"
#include "formats/kineto_json/kineto_json_reader.hpp"
#include "formats/kineto_json/kineto_json_text.hpp"
#include "spool/compression_filters.hpp"

using namespace proftrace::detail;

namespace {

const std::string& sample = kineto_json_sample;

struct collected {
  std::vector<std::uint64_t> indices;
  std::vector<std::string> events, members;

  kineto_json_handlers handlers() {
    return {.on_event = [this](std::uint64_t i, std::string_view e) { indices.push_back(i), events.emplace_back(e); },
            .on_member = [this](std::string_view k, std::string_view v) {
              members.push_back(std::string(k) + "=" + std::string(v));
            }};
  }
};

// The reader over `text`, `chunk` bytes at a time; finish()'s answer.
bool read_all(const std::string& text, std::size_t chunk, collected& out) {
  kineto_json_reader reader(out.handlers(), {.chunk = chunk});
  std::istringstream in(text);
  REQUIRE(reader.read(in));
  return reader.finish();
}

// A stream that fails (badbit, as a decompressor's error leaves it) after `good` bytes.
class failing_buffer : public std::streambuf {
 public:
  failing_buffer(std::string text, std::size_t good) : text_(std::move(text)), good_(good) {}

 protected:
  int_type underflow() override {
    if (at_ == good_) throw std::ios_base::failure("corrupt");
    setg(text_.data() + at_, text_.data() + at_, text_.data() + at_ + 1);
    ++at_;
    return traits_type::to_int_type(text_[at_ - 1]);
  }

 private:
  std::string text_;
  std::size_t good_, at_ = 0;
};

}  // namespace

TEST_CASE("kineto_json_reader: the same events, indices and members at every chunk size") {
  for (std::size_t chunk = 1; chunk <= sample.size(); ++chunk) {
    CAPTURE(chunk);
    collected got;
    CHECK_FALSE(read_all(sample, chunk, got));
    REQUIRE(got.events.size() == 2);
    CHECK(got.indices == std::vector<std::uint64_t>{0, 1});
    const auto first = boost::json::parse(got.events[0]).as_object();
    CHECK(first.at("name") == "a\"}]\\");
    CHECK(first.at("args").at("nested").at("deeper").at("x") == "{[");
    CHECK(boost::json::serialize(first.at("args").at("Input Dims")) == "[[64,128],[]]");
    CHECK(got.events[1] == "{\"ph\": \"i\", \"name\": \"b\", \"ts\": -12345.678e-3}");
    CHECK(got.members == std::vector<std::string>{"schemaVersion=1", "deviceProperties=[{\"id\": 0, \"name\": \"}]\"}]",
                                                  "baseTimeNanoseconds=1700000000000000000"});
  }
}

TEST_CASE("kineto_json_reader: chunks of any sizes fed one after another read as the whole text") {
  std::mt19937 random(37);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    collected got;
    kineto_json_reader reader(got.handlers());
    for (std::size_t at = 0; at < sample.size();) {
      const std::size_t size = std::uniform_int_distribution<std::size_t>(0, 40)(random);
      reader.feed(std::string_view(sample).substr(at, size));
      at += size;
    }
    CHECK_FALSE(reader.finish());
    CHECK(got.events.size() == 2);
    CHECK(got.members.size() == 3);
    CHECK(reader.events() == 2);
  }
}

TEST_CASE("kineto_json_reader: a cut anywhere inside traceEvents keeps every complete event before it") {
  const std::size_t events_open = sample.find('[', sample.find("traceEvents")) + 1;
  const std::size_t first_end = sample.find("}}}},") + 4;
  const std::size_t second_end = sample.find("e-3}") + 4;
  const std::size_t events_close = sample.find(" ],") + 2;
  for (std::size_t cut = events_open; cut < events_close; ++cut) {
    CAPTURE(cut);  // inside strings ("a\"}]\\"), numbers (1.5, -12345.678e-3), nested args
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 20}) {
      collected got;
      CHECK(read_all(sample.substr(0, cut), chunk, got));
      CHECK(got.events.size() == std::size_t{cut >= first_end} + std::size_t{cut >= second_end});
    }
  }
}

TEST_CASE("kineto_json_reader: a text that ends before traceEvents, or has none, is no trace") {
  const std::size_t events_open = sample.find('[', sample.find("traceEvents"));
  for (std::size_t cut = 0; cut <= events_open; ++cut) {
    CAPTURE(cut);
    collected got;
    kineto_json_reader reader(got.handlers(), {.chunk = 5});
    std::istringstream in(sample.substr(0, cut));
    CHECK(reader.read(in));
    CHECK_THROWS_AS(reader.finish(), json_events_scanner::error);
  }
  collected got;
  kineto_json_reader reader(got.handlers());
  std::istringstream in("{\"schemaVersion\": 1}");
  CHECK(reader.read(in));
  CHECK_THROWS_WITH(reader.finish(), doctest::Contains("no \"traceEvents\" array"));
}

TEST_CASE("kineto_json_reader: an event over the bound is refused, naming its index, whatever the chunking") {
  const std::string text = "{\"traceEvents\": [{\"name\": \"x\"}, {\"name\": \"" + std::string(100, 'y') + "\"}]}";
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{64}, text.size()}) {
    CAPTURE(chunk);
    collected got;
    kineto_json_reader reader(got.handlers(), {.max_piece = 64, .chunk = chunk});
    std::istringstream in(text);
    try {
      reader.read(in);
      FAIL("not refused");
    } catch (const json_events_scanner::error& e) {
      CHECK(e.what_kind == json_events_scanner::error::kind::too_long);
      CHECK(e.element == 1);
    }
    CHECK(got.events.size() == 1);
  }
}

TEST_CASE("kineto_json_reader: a stream that fails is told from one that ends") {
  collected got;
  kineto_json_reader reader(got.handlers(), {.chunk = 4});
  failing_buffer buffer(sample, sample.find("{\"ph\": \"i\""));
  std::istream in(&buffer);
  CHECK_FALSE(reader.read(in));
  CHECK(got.events.size() == 1);  // what came before the failure was read
  CHECK(reader.finish());
}

TEST_CASE("kineto_json_reader: each event's byte offsets, and the structure checked when asked") {
  std::vector<std::string> spans;
  kineto_json_reader* self = nullptr;
  kineto_json_reader reader({.on_event = [&](std::uint64_t, std::string_view e) {
                               spans.push_back(sample.substr(self->event_begin(), self->event_end() - self->event_begin()));
                               CHECK(spans.back() == e);
                             },
                             .on_member = {}},
                            {.chunk = 3, .check_structure = true});
  self = &reader;
  std::istringstream in(sample);
  REQUIRE(reader.read(in));
  CHECK_FALSE(reader.finish());
  CHECK(spans.size() == 2);
  kineto_json_reader checked({.on_event = [](std::uint64_t, std::string_view) {}, .on_member = {}},
                             {.check_structure = true});
  CHECK_THROWS_WITH_AS(checked.feed("{\"traceEvents\": [{} {}]}"), "unexpected '{' in \"traceEvents\" (at byte 21)",
                       json_events_scanner::error);
}

TEST_CASE("kineto_json_text: a trace's text by its suffix, plain, gzip or zstd") {
  test_support::temp_dir dir("kineto_json_text");
  for (const char* name : {"t.json", "t.json.gz", "t.json.zst"}) {
    CAPTURE(name);
    const auto path = dir.path / name;
    {
      std::ofstream file(path, std::ios::binary);
      boost::iostreams::filtering_ostream out;
      push_compressor(out, compression_of(path));
      out.push(file);
      out << sample;
    }
    kineto_json_text text(path);
    collected got;
    kineto_json_reader reader(got.handlers());
    CHECK(reader.read(text.stream()));
    CHECK_FALSE(reader.finish());
    CHECK(got.events.size() == 2);
  }
  CHECK_THROWS_WITH(kineto_json_text(dir.path / "missing.json"), doctest::Contains("cannot open"));
}
