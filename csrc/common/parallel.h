// The CPU kernels' dynamic schedule, in one place: work handed out item by item.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace softdtw_torch {

// Calls body(item, state) once for each item 0 … n_items − 1. Items are handed out one at a time,
// in that order, from a shared counter to every thread at::parallel_for runs, each thread with
// its own State (a workspace kept across its items), so that no thread idles while another still
// has work: items of unequal size (ragged lengths), or a thread slowed by other work on the
// machine. No item starts once stop() is true. Each item must write only its own outputs, so the
// bits do not depend on the thread count or on which thread took which item.
struct NeverStop {
  bool operator()() const { return false; }
};

template <typename State, typename Body, typename Stop = NeverStop>
void for_each_shared_item(int64_t n_items, const Body& body, const Stop& stop = Stop()) {
  std::atomic<int64_t> next_item{0};
  const int64_t n_workers = std::min<int64_t>(at::get_num_threads(), n_items);
  at::parallel_for(0, n_workers, 1, [&](int64_t, int64_t) {
    State state;
    for (int64_t item = next_item++; item < n_items && !stop(); item = next_item++) body(item, state);
  });
}

// The same without a workspace or an early stop: body(item).
template <typename Body>
void for_each_shared_item(int64_t n_items, const Body& body) {
  struct NoState {};
  for_each_shared_item<NoState>(n_items, [&](int64_t item, NoState&) { body(item); });
}

}  // namespace softdtw_torch
