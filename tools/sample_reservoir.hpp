// tools/sample_reservoir.hpp — a bounded, deterministic uniform sample of a
// stream of values (Vitter's algorithm R), for diff's per-call self times: a
// key called ten million times keeps `capacity` values, each call equally
// likely to be among them, and the same input gives the same sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace proftrace::tools {

class sample_reservoir {
 public:
  static constexpr std::size_t default_capacity = 20000;
  explicit sample_reservoir(std::size_t capacity = default_capacity) : capacity_(capacity ? capacity : 1) {}

  void add(double v) {
    ++seen_;
    if (values_.size() < capacity_) {
      values_.push_back(v);
      return;
    }
    const std::uint64_t j = next() % seen_;
    if (j < capacity_) values_[j] = v;
  }
  const std::vector<double>& values() const noexcept { return values_; }
  std::uint64_t seen() const noexcept { return seen_; }

 private:
  // splitmix64: a fixed seed, so that a diff of the same traces is the same diff.
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t capacity_;
  std::vector<double> values_;
  std::uint64_t seen_ = 0;
  std::uint64_t state_ = 0x5eed;
};

}  // namespace proftrace::tools
