#include "proftrace/detail/recorder.hpp"

#include "record_layout.hpp"
#include "registry.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {
namespace {
std::atomic<overflow_policy> overflow{static_cast<overflow_policy>(PROFTRACE_OVERFLOW_POLICY)};
}

const site step_site{"ProfilerStep", "", __FILE__, 0, category::step};
const site thread_step_site{"thread step", "", __FILE__, 0, category::step};
const site api_step_site{"ProfilerStep", "", __FILE__, 0, category::step};
const site ring_wait_site{"ring full: waiting", "", __FILE__, 0, category::proftrace};

overflow_policy current_overflow_policy() noexcept { return overflow.load(std::memory_order_relaxed); }
void set_overflow_policy(overflow_policy p) noexcept { overflow.store(p, std::memory_order_relaxed); }

void record_instant(const site* s) noexcept {
  if (ring* r = thread_ring()) r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), 0, event_kind::instant);
}

void record_counter(const site* s, double value) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (ring* r = thread_ring()) r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), bits, event_kind::counter);
}

void record_flops(std::int64_t value, bool valid) noexcept {
  if (ring* r = thread_ring())
    r->push(r->now(), valid ? 0 : 1, valid ? static_cast<std::uint64_t>(value) : 0, event_kind::flops);
}

void record_alloc(const void* address, std::int64_t bytes, int device, memory_category category) noexcept {
  if (category == memory_category::unknown) category = this_thread_memory_category;
  if (ring* r = thread_ring())
    r->push(r->now(), reinterpret_cast<std::uintptr_t>(address),
            memory_payload(bytes, device, static_cast<std::uint8_t>(category)), event_kind::alloc);
}

void record_free(const void* address, int device) noexcept {
  if (ring* r = thread_ring())
    r->push(r->now(), reinterpret_cast<std::uintptr_t>(address), memory_payload(0, device), event_kind::free);
}

void record_reserved(std::int64_t bytes, int device) noexcept {
  if (ring* r = thread_ring()) r->push(r->now(), 0, memory_payload(bytes, device), event_kind::reserved);
}

std::uint64_t record_begin_with_shapes(const site* s, shape_list shapes, std::uint64_t correlation) noexcept {
  ring* r = thread_ring();
  if (!r) return no_begin;
  if (!(session_state.load(std::memory_order_relaxed) & state_record_shapes))
    return r->push(r->now(), reinterpret_cast<std::uintptr_t>(s), correlation, event_kind::begin);
  // Pack [count, ndim, dims..., ...] into words 0..2 of each extension slot
  // (word 3 holds the slot's kind). Shapes that do not fit are cut off.
  std::uint64_t words[max_shape_words] = {};
  std::uint32_t used = 0;
  const auto put = [&](std::int64_t v) { return put_data_word(words, max_shape_words, used, v); };
  std::int64_t count = 0;
  put(0);  // count, patched below
  for (const auto& shape : shapes) {
    const std::uint32_t mark = used;
    bool fits = put(static_cast<std::int64_t>(shape.size()));
    for (shape_dim d : shape) fits = fits && put(d.value);
    if (!fits) {
      used = mark;
      break;
    }
    ++count;
  }
  words[0] = static_cast<std::uint64_t>(count);
  return r->push_record(r->now(), reinterpret_cast<std::uintptr_t>(s), correlation, event_kind::shapes, words,
                        slots_for_words(used));
}

std::uint64_t record_comm_begin(const site* s, std::int64_t bytes, int peer, std::uint64_t correlation) noexcept {
  if (ring* r = thread_ring()) {
    std::uint64_t words[words_per_event] = {};
    encode_comm(words, bytes, peer);
    return r->push_record(r->now(), reinterpret_cast<std::uintptr_t>(s), correlation, event_kind::comm, words, 1);
  }
  return no_begin;
}

static_assert(max_dynamic_name_bytes == max_text_bytes);

std::uint64_t record_dynamic_begin(const site* s, std::string_view name, std::uint64_t correlation) noexcept {
  ring* r = thread_ring();
  if (!r) return no_begin;
  std::uint64_t words[max_text_words];
  const std::uint32_t slots = encode_text(words, name);
  return r->push_record(r->now(), reinterpret_cast<std::uintptr_t>(s), correlation, event_kind::dynamic_begin,
                        words, slots);
}

void record_arg_integer(const site* key, std::int64_t value) noexcept {
  if (ring* r = thread_ring())
    r->push(r->now(), encode_arg_where(key, arg_type::integer), static_cast<std::uint64_t>(value), event_kind::arg);
}
void record_arg_unsigned(const site* key, std::uint64_t value) noexcept {
  if (ring* r = thread_ring()) r->push(r->now(), encode_arg_where(key, arg_type::unsigned_integer), value, event_kind::arg);
}
void record_arg_floating(const site* key, double value) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (ring* r = thread_ring()) r->push(r->now(), encode_arg_where(key, arg_type::floating), bits, event_kind::arg);
}
void record_arg_string(const site* key, std::string_view value) noexcept {
  if (ring* r = thread_ring()) {
    std::uint64_t words[max_text_words];
    const std::uint32_t slots = encode_text(words, value);
    r->push_record(r->now(), encode_arg_where(key, arg_type::string), 0, event_kind::arg, words, slots);
  }
}

#if PROFTRACE_WITH_CUDA
std::uint64_t record_step_begin(const site* s, std::int64_t step, std::uint64_t correlation) noexcept {
  if (ring* r = thread_ring()) {
    const std::uint64_t words[words_per_event] = {correlation};
    return r->push_record(r->now(), reinterpret_cast<std::uintptr_t>(s), static_cast<std::uint64_t>(step),
                          event_kind::begin, words, 1);
  }
  return no_begin;
}
#endif

}  // namespace proftrace::detail
