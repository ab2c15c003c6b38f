// tools/event_handover.hpp — a trace decoded on a thread of its own while
// the caller's thread takes its events (internal to tools/): the two halves
// of a read on two cores, through a few batches of reused trace_events. The
// .pftrace reader and the JSON reader both read this way.
//
//   item_queue q(batching.batch_events, batching.batches);
//   event_batcher batcher(q);
//   decoding thread: decoded_item* item = batcher.slot(); fill item ...; batcher.hand_over(); (at the end)
//   const handover_end end = decode_ahead(q, options, [&] { decode(); }, [&] { batcher.hand_over(); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <thread>
#include <utility>

#include "batch_queue.hpp"
#include "trace_reader.hpp"

namespace proftrace::tools {

// Batches of another size than the readers' own (tests: batch boundaries).
struct event_batching {
  std::size_t batch_events = 256;  // events per batch (their ring stays within a core's caches)
  std::size_t batches = 8;         // batches in flight (at least 2)
};

// An event for the consumer; in a batch's last one, the trace's elements
// the decoder had counted when it handed the batch over (in the others, the
// next one's index).
struct decoded_item {
  trace_event event;
  std::uint64_t elements_after = 0;
  std::size_t metadata = 0;  // trace-wide entries read before it
};
using item_queue = batch_queue<decoded_item>;

// The decoding thread's side: the batch being filled, handed over when
// full (or at the end).
class event_batcher {
 public:
  explicit event_batcher(item_queue& q) : q_(q) {}

  // The next item to fill (the batch before handed over when full); null
  // once the consumer stopped.
  decoded_item* slot() {
    decoded_item* item = reserve();
    if (item) commit();
    return item;
  }
  // The same, filled in place and counted by commit() only: an item given
  // up (an event the parse failed inside) is never handed over.
  decoded_item* reserve() {
    if ((!batch_ || batch_->full()) && !hand_over()) return nullptr;
    return &batch_->reserve();
  }
  void commit() noexcept { batch_->commit(); }
  // The item slot() returned last (the batch is not empty).
  decoded_item& last() { return batch_->items[batch_->size - 1]; }
  bool empty() const noexcept { return !batch_ || batch_->size == 0; }
  bool full() const noexcept { return batch_ && batch_->full(); }
  // Hands over what was filled; false: the consumer stopped.
  bool hand_over() {
    if (batch_ && batch_->size > 0 && !q_.push(batch_)) return false;
    if (!batch_) batch_ = q_.take_empty();
    return batch_ != nullptr;
  }

 private:
  item_queue& q_;
  std::unique_ptr<item_queue::batch> batch_;
};

// Where the consumer stopped: the elements counted up to its last event,
// and the trace-wide entries read before it.
struct consumer_stop {
  bool stopped = false;
  std::uint64_t elements = 0;
  std::size_t metadata = 0;
};

// The calling thread's side: each event to options.on_event, in order.
inline consumer_stop consume(item_queue& q, const read_options& options) {
  std::unique_ptr<item_queue::batch> b;
  while (q.pop(b))
    for (std::size_t i = 0; i < b->size; ++i)
      if (options.on_event && !options.on_event(b->items[i].event)) {
        q.cancel();
        return {true, i + 1 < b->size ? b->items[i + 1].event.index : b->items[i].elements_after,
                b->items[i].metadata};
      }
  return {};
}

// How a read on two threads ended: where the consumer stopped, and what
// the decoder threw (the events before it were delivered first).
struct handover_end {
  consumer_stop stop;
  std::exception_ptr failure;
};

// Runs `decode` on a thread of its own and `flush` (which hands over the
// last batch) after it, even when it throws, while this thread consumes.
// What on_event throws is thrown here, once the decoder has stopped.
template <class Decode, class Flush>
handover_end decode_ahead(item_queue& q, const read_options& options, Decode&& decode, Flush&& flush) {
  handover_end end;
  std::thread decoding([&] {
    try {
      decode();
    } catch (...) {
      end.failure = std::current_exception();
    }
    flush();
    q.close();
  });
  try {
    end.stop = consume(q, options);
  } catch (...) {
    q.cancel();
    decoding.join();
    throw;
  }
  decoding.join();
  return end;
}

}  // namespace proftrace::tools
