#pragma once
// The Executor's signatures: at most `capacity` entries, found by a hash of the inputs'
// signature and a caller's equality test, the least recently used dropped first. A program that
// runs one fusion over ever new sizes (a server's batch sizes, a training loop's sequence
// lengths) keeps a bounded set of entries (each with its plan and its intermediates on the
// device) instead of one per size it ever saw.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>

namespace loom::runtime {

template <class T>
class SignatureLru {
 public:
  explicit SignatureLru(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The entry under `hash` that `same(entry)` accepts, made the most recent; null if none.
  template <class Same>
  T* find(std::uint64_t hash, const Same& same) {
    auto [lo, hi] = by_hash_.equal_range(hash);
    for (auto it = lo; it != hi; ++it)
      if (same(*it->second->item)) {
        order_.splice(order_.begin(), order_, it->second);
        return order_.front().item.get();
      }
    return nullptr;
  }

  // Adds `item` as the most recent; past the capacity, the least recent entry leaves and is
  // returned (for the caller to release), else null.
  std::unique_ptr<T> insert(std::uint64_t hash, std::unique_ptr<T> item) {
    order_.push_front(Node{hash, std::move(item)});
    by_hash_.emplace(hash, order_.begin());
    if (order_.size() <= capacity_) return nullptr;
    auto last = std::prev(order_.end());
    auto [lo, hi] = by_hash_.equal_range(last->hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == last) {
        by_hash_.erase(it);
        break;
      }
    std::unique_ptr<T> out = std::move(last->item);
    order_.pop_back();
    return out;
  }

  T* mostRecent() { return order_.empty() ? nullptr : order_.front().item.get(); }
  std::size_t size() const { return order_.size(); }
  std::size_t capacity() const { return capacity_; }

  // Every entry, most recent first.
  template <class F>
  void forEach(const F& f) {
    for (auto& n : order_) f(*n.item);
  }

 private:
  struct Node {
    std::uint64_t hash;
    std::unique_ptr<T> item;
  };
  std::size_t capacity_;
  std::list<Node> order_;  // most recent first
  std::unordered_multimap<std::uint64_t, typename std::list<Node>::iterator> by_hash_;
};

}  // namespace loom::runtime
