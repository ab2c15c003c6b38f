#include "memory_resolver.hpp"

#include <algorithm>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

void memory_resolver::resolve_noted(bool split, std::uint64_t split_ticks) {
  std::stable_sort(timeline_.begin(), timeline_.end(),
                   [](const timed_event& a, const timed_event& b) { return a.ticks < b.ticks; });
  bool crossed = !split;
  for (const timed_event& t : timeline_) {
    if (!crossed && t.ticks > split_ticks) {
      cross_split();
      crossed = true;
    }
    if (t.out == nullptr) {
      current_step_ = std::max(current_step_, static_cast<std::int64_t>(t.e->payload));
      continue;
    }
    resolve(*t.e, *t.out);
  }
  if (!crossed) cross_split();
  timeline_.clear();
}

void memory_resolver::resolve(const event& e, resolved_memory& m) {
  const auto kind = static_cast<event_kind>(e.kind);
  const int device = payload_device(e.payload);
  if (device == invalid_memory_device) return;  // refused (and counted) by pairing: no device's totals
  device_totals& dev = totals_[device];
  m.step = current_step_;
  if (kind == event_kind::reserved) {
    dev.reported_reserved = payload_bytes(e.payload);
    m.bytes = dev.reported_reserved;
  } else if (kind == event_kind::alloc) {
    m.bytes = payload_bytes(e.payload);
    m.category = static_cast<memory_category>(payload_category(e.payload));
    auto [at, fresh] = live_.try_emplace({device, e.where});
    live_allocation& a = at->second;
    if (!fresh) {  // an address reported twice without a free: the earlier block is taken as freed here
      m.replaced_live = true;
      m.replaced_bytes = a.bytes;
      m.replaced_category = a.category;
      dev.allocated -= a.bytes;
    }
    a = {m.bytes, m.category};
    dev.allocated += m.bytes;
  } else {
    const auto found = live_.find({device, e.where});
    if (found == live_.end()) {
      m.known = false;
      return;
    }
    m.bytes = -found->second.bytes;
    m.category = found->second.category;
    dev.allocated += m.bytes;
    live_.erase(found);
  }
  m.total_allocated = dev.allocated;
  m.total_reserved = dev.reserved();
}

// The switch point: a window after a gap starts from nothing (what was
// allocated while nothing recorded is unknown); a window that follows
// another starts with the allocations still live.
void memory_resolver::cross_split() {
  preexisting_.clear();
  if (!next_start_) return;
  if (next_start_->after_gap) {
    live_.clear();
    totals_.clear();
    lost = false;
    current_step_ = next_start_->first_step;
    return;
  }
  current_step_ = std::max(current_step_, next_start_->first_step);
  for (const auto& [key, a] : live_) {
    const device_totals& dev = totals_[key.first];
    preexisting_.push_back({-1, a.bytes, dev.allocated, dev.reserved(), current_step_, key.first, a.category,
                            memory_action::preexisting});
  }
  for (const auto& [device, dev] : totals_)
    if (dev.reported_reserved > 0)
      preexisting_.push_back({-1, dev.reported_reserved, dev.allocated, dev.reserved(), current_step_, device,
                              memory_category::unknown, memory_action::reserve});
}

}  // namespace proftrace::detail
