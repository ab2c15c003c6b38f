// Internal: items given in any order, handed back sorted, in bounded memory
// (an external merge sort). An item is a fixed-size key, which orders it,
// and an optional payload of bytes. Items are held in memory up to a
// budget, then sorted and spilled as one run to an anonymous temporary file
// (std::tmpfile: no name, so nothing is left behind even by a kill);
// merge() merges the runs with what is held. Past `max_runs` runs they are
// first merged into one, so the open files and their read buffers stay
// bounded too. Used by `proftrace summary` (a thread's events in nesting
// order) and by the JSON-to-Perfetto converter (a thread's slices by start).
//
//   sorted_runs<record, by_start> runs(by_start{}, {.max_items = 1 << 20, .max_bytes = 16 << 20});
//   runs.add(r, payload);
//   runs.merge([](const record& r, std::string_view payload) { ... });  // in order, once
#pragma once

#include "proftrace/config.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

// One spilled run: written once, then read back once, in order. Throws
// std::runtime_error when the temporary file cannot be made or written.
class run_file {
 public:
  run_file();
  ~run_file();
  run_file(const run_file&) = delete;
  run_file& operator=(const run_file&) = delete;

  void write(const void* data, std::size_t n);
  void finish_writing();  // flushes and rewinds
  // The next `n` bytes, valid until the next call; shorter only at the end.
  std::string_view read(std::size_t n);

 private:
  void flush();
  std::FILE* file_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
};

template <class Key, class Less>
class sorted_runs {
  static_assert(std::is_trivially_copyable_v<Key>, "keys are spilled as their bytes");

 public:
  struct limits {
    std::size_t max_items = std::size_t{1} << 20;  // held in memory before a spill
    std::size_t max_bytes = std::size_t{16} << 20;  // of payloads held
    std::size_t max_runs = 64;
  };
  sorted_runs(Less less, limits l) : less_(std::move(less)), limits_(l) {
    limits_.max_bytes = std::min(limits_.max_bytes, std::size_t{1} << 30);  // a payload may pass it: 32-bit offsets
  }

  // Called on each held key just before it is sorted: the caller's last say on it.
  void before_sort(std::function<void(Key&)> prepare) { prepare_ = std::move(prepare); }

  void add(const Key& key, std::string_view payload = {}) {
    if (!held_.empty() && (held_.size() >= limits_.max_items || arena_.size() + payload.size() > limits_.max_bytes))
      spill();
    // Reserved once, never copied as they grow (only what is written takes memory).
    if (held_.capacity() < limits_.max_items) held_.reserve(limits_.max_items);
    if (!payload.empty() && arena_.capacity() < limits_.max_bytes) arena_.reserve(limits_.max_bytes);
    held_.push_back({key, static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(payload.size())});
    arena_.append(payload);
  }

  // fn(const Key&, std::string_view payload) for every item, in order
  // (payloads valid during the call). Once: the items are gone after it.
  template <class Fn>
  void merge(Fn&& fn) {
    sort_held();
    std::vector<source> sources(runs_.size() + 1);
    for (std::size_t i = 0; i < runs_.size(); ++i) sources[i].run = runs_[i].get();
    merge_sources(sources, fn);
    runs_.clear();
    held_ = {};
    arena_ = {};
  }

  std::size_t spilled_runs() const noexcept { return spilled_; }

 private:
  struct held_item {
    Key key;
    std::uint32_t offset, size;  // in arena_, which max_bytes keeps far below 4 GiB
  };
  // A run being read, or (run null) the held items.
  struct source {
    run_file* run = nullptr;
    std::size_t at = 0;
    Key key{};
    std::string_view payload;
  };

  void sort_held() {
    if (prepare_)
      for (held_item& h : held_) prepare_(h.key);
    std::sort(held_.begin(), held_.end(), [&](const held_item& a, const held_item& b) { return less_(a.key, b.key); });
  }

  void spill() {
    sort_held();
    auto run = std::make_unique<run_file>();
    for (const held_item& h : held_) write_item(*run, h.key, std::string_view(arena_).substr(h.offset, h.size));
    run->finish_writing();
    runs_.push_back(std::move(run));
    ++spilled_;
    held_.clear();
    arena_.clear();
    if (runs_.size() >= limits_.max_runs) merge_runs_into_one();
  }

  void merge_runs_into_one() {
    std::vector<source> sources(runs_.size());
    for (std::size_t i = 0; i < runs_.size(); ++i) sources[i].run = runs_[i].get();
    auto merged = std::make_unique<run_file>();
    const auto write = [&](const Key& k, std::string_view payload) { write_item(*merged, k, payload); };
    merge_sources(sources, write);
    merged->finish_writing();
    runs_.clear();
    runs_.push_back(std::move(merged));
  }

  static void write_item(run_file& run, const Key& key, std::string_view payload) {
    const auto size = static_cast<std::uint32_t>(payload.size());
    run.write(&key, sizeof key);
    run.write(&size, sizeof size);
    run.write(payload.data(), payload.size());
  }

  // Loads the source's next item; false at its end.
  bool next(source& s) {
    if (!s.run) {
      if (s.at >= held_.size()) return false;
      const held_item& h = held_[s.at++];
      s.key = h.key;
      s.payload = std::string_view(arena_).substr(h.offset, h.size);
      return true;
    }
    const std::string_view key = s.run->read(sizeof(Key));
    if (key.size() < sizeof(Key)) return false;
    std::memcpy(&s.key, key.data(), sizeof(Key));
    std::uint32_t size = 0;
    std::memcpy(&size, s.run->read(sizeof size).data(), sizeof size);
    s.payload = s.run->read(size);
    return true;
  }

  template <class Fn>
  void merge_sources(std::vector<source>& sources, Fn& fn) {
    const auto later = [&](std::size_t a, std::size_t b) { return less_(sources[b].key, sources[a].key); };
    std::vector<std::size_t> heap;
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (next(sources[i])) heap.push_back(i);
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const std::size_t i = heap.back();
      fn(std::as_const(sources[i].key), sources[i].payload);
      if (next(sources[i])) std::push_heap(heap.begin(), heap.end(), later);
      else heap.pop_back();
    }
  }

  Less less_;
  limits limits_;
  std::function<void(Key&)> prepare_;
  std::vector<held_item> held_;
  std::string arena_;  // the held items' payloads
  std::vector<std::unique_ptr<run_file>> runs_;
  std::size_t spilled_ = 0;
};

}  // namespace proftrace::detail
