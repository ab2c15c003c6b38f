// tools/batch_queue.hpp — batches of items handed from one producer thread
// to one consumer thread, a bounded number in flight (internal to tools/).
//
//   batch_queue<trace_event> q(1024, 8);
//   producer: auto b = q.take_empty(); fill(b->next()) ...; if (b->full()) q.push(b);  ... q.close();
//   consumer: std::unique_ptr<batch_queue<trace_event>::batch> b; while (q.pop(b)) use(b->items, b->size);
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace proftrace::tools {

// The batches go round (filled, used, filled again) and keep their items,
// so items whose members keep their capacity (strings) cost no allocation
// once the first rounds have made them.
template <class T>
class batch_queue {
 public:
  struct batch {
    std::vector<T> items;  // [0, size) filled; the rest kept for reuse
    std::size_t size = 0;
    std::size_t capacity = 0;
    bool full() const noexcept { return size == capacity; }
    T& next() {
      T& item = reserve();
      commit();
      return item;
    }
    // The item next() would give, not counted yet: commit() counts it (an
    // item filled in place, which may also be given up).
    T& reserve() {
      if (size == items.size()) items.emplace_back();
      return items[size];
    }
    void commit() noexcept { ++size; }
  };

  // `depth` batches (at least 2) of `batch_items` (at least 1) each. A
  // waiting consumer is woken once half of them are full (or at the end):
  // a wake-up costs more than the work on a small batch.
  batch_queue(std::size_t batch_items, std::size_t depth) : wake_at_(std::max<std::size_t>(depth, 2) / 2) {
    for (std::size_t i = 0; i < std::max<std::size_t>(depth, 2); ++i) {
      free_.push_back(std::make_unique<batch>());
      free_.back()->capacity = std::max<std::size_t>(batch_items, 1);
      free_.back()->items.reserve(free_.back()->capacity);  // items filled in place do not move
    }
  }

  // Producer: an empty batch to fill (waits for one); null once cancelled.
  std::unique_ptr<batch> take_empty() {
    std::unique_lock lock(m_);
    freed_.wait(lock, [&] { return cancelled_ || !free_.empty(); });
    if (cancelled_) return nullptr;
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  // Producer: hands `b` over; false (and `b` kept) once the consumer cancelled.
  bool push(std::unique_ptr<batch>& b) {
    std::unique_lock lock(m_);
    if (cancelled_) return false;
    full_.push_back(std::move(b));
    const bool wake = full_.size() == wake_at_;
    lock.unlock();
    if (wake) filled_.notify_one();
    return true;
  }
  // Producer: no more batches.
  void close() {
    update([&] { closed_ = true; });
  }

  // Consumer: gives back `b` (the batch it is done with, or null) and takes
  // the next full one; false when the producer closed and all were taken.
  bool pop(std::unique_ptr<batch>& b) {
    std::unique_lock lock(m_);
    if (b) {
      b->size = 0;
      free_.push_back(std::move(b));
      freed_.notify_one();
    }
    if (full_.empty()) filled_.wait(lock, [&] { return closed_ || full_.size() >= wake_at_; });
    if (full_.empty()) return false;
    b = std::move(full_.front());
    full_.pop_front();
    return true;
  }
  // Consumer: it stops; the producer's take_empty() and push() fail from now on.
  void cancel() {
    update([&] { cancelled_ = true; });
  }

 private:
  // Changes the state under the lock, then wakes the other side.
  template <class F>
  void update(F&& change) {
    {
      std::lock_guard lock(m_);
      change();
    }
    filled_.notify_all();
    freed_.notify_all();
  }

  const std::size_t wake_at_;
  std::mutex m_;
  std::condition_variable filled_, freed_;  // the consumer waits on the one, the producer on the other
  std::deque<std::unique_ptr<batch>> full_;
  std::vector<std::unique_ptr<batch>> free_;
  bool closed_ = false, cancelled_ = false;
};

}  // namespace proftrace::tools
