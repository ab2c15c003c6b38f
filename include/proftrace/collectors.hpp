// proftrace/collectors.hpp — collectors as compile-time policy types.
//
//   using my_profile = proftrace::basic_profile<proftrace::collect::cpu_ranges>;
//   static_assert(proftrace::collector_list<proftrace::collect::cpu_ranges>::size == 1);
//
// A collector is a plain struct with `static constexpr activity kind`. The
// trait `is_available<C>`, specialised next to each collector's declaration,
// says whether this build compiled it in; `collector_list<C...>` keeps only
// the available ones, so an unavailable collector (CUDA without the toolkit)
// drops out at compile time and its headers are never needed. A session then
// picks a run-time subset of `activities`.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>

namespace proftrace {

enum class activity : std::uint8_t { cpu = 0, cuda = 1, memory = 2, flops = 3, nvtx = 4, counters = 5, openmp = 6 };

inline std::string_view to_string(activity a) noexcept {
  switch (a) {
    case activity::cpu: return "CPU";
    case activity::cuda: return "CUDA";
    case activity::memory: return "MEMORY";
    case activity::flops: return "FLOPS";
    case activity::nvtx: return "NVTX";
    case activity::counters: return "COUNTERS";
    case activity::openmp: return "OPENMP";
  }
  return "?";
}

// A small set of activities (torch's `activities` argument).
class activity_set {
 public:
  constexpr activity_set() = default;
  constexpr activity_set(std::initializer_list<activity> list) {
    for (activity a : list) bits_ |= bit(a);
  }
  static constexpr activity_set from_bits(std::uint32_t bits) {
    activity_set s;
    s.bits_ = bits;
    return s;
  }
  constexpr bool contains(activity a) const { return (bits_ & bit(a)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr std::uint32_t bits() const { return bits_; }
  constexpr activity_set operator&(activity_set o) const { return from_bits(bits_ & o.bits_); }
  constexpr activity_set operator|(activity_set o) const { return from_bits(bits_ | o.bits_); }
  constexpr bool operator==(const activity_set&) const = default;

 private:
  static constexpr std::uint32_t bit(activity a) { return 1u << static_cast<unsigned>(a); }
  std::uint32_t bits_ = 0;
};

// Specialised next to each collector; true unless a collector says otherwise.
template <class Collector>
struct is_available : std::true_type {};

template <class... C>
struct type_list {
  static constexpr std::size_t size = sizeof...(C);
};

namespace meta {
template <class Done, class... Rest>
struct keep_available;
template <class... Done>
struct keep_available<type_list<Done...>> {
  using type = type_list<Done...>;
};
template <class... Done, class First, class... Rest>
struct keep_available<type_list<Done...>, First, Rest...> {
  using type = typename keep_available<
      std::conditional_t<is_available<First>::value, type_list<Done..., First>, type_list<Done...>>, Rest...>::type;
};
}  // namespace meta

// The available collectors among C..., in order.
template <class... C>
using collector_list = typename meta::keep_available<type_list<>, C...>::type;

template <class List>
struct activities_of;
template <class... C>
struct activities_of<type_list<C...>> {
  static constexpr activity_set value{C::kind...};
};

}  // namespace proftrace
