// Remembers the ids of the last requests an actor applied, so that a request delivered twice
// (a retry after a timeout, or a late duplicate) changes state once. Bounded: ids older than
// the last `capacity` are forgotten, oldest first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

namespace darcy::actors {

class request_window {
public:
  explicit request_window(size_t capacity = 65536) : capacity_(capacity) {}

  /// True when `id` was remembered and not yet forgotten. Id 0 means "no id": never seen.
  bool seen(uint64_t id) const { return id != 0 && seen_.count(id) != 0; }

  /// Remembers `id` (a request that was applied); no-op for 0 or an id already remembered.
  void remember(uint64_t id) {
    if (id == 0 || !seen_.insert(id).second)
      return;
    order_.push_back(id);
    if (order_.size() > capacity_) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
  }

private:
  size_t capacity_;
  std::unordered_set<uint64_t> seen_;
  std::deque<uint64_t> order_;
};

} // namespace darcy::actors
