// An immutable array whose memory is owned elsewhere and kept alive by every copy: a vector it
// adopted, or a memory-mapped file. Indexes hold their large parts this way, so that a loaded
// index reads its file's pages in place.
//
//   shared_array<float> a{std::vector<float>{1, 2, 3}};
//   shared_array<float> b{view_of_mapping, mapping};  // mapping: a std::shared_ptr
#pragma once

#include <memory>
#include <span>
#include <vector>

namespace darcy::compute {

template <class T>
class shared_array {
public:
  shared_array() = default;

  /// Adopts `values`.
  explicit shared_array(std::vector<T> values) {
    auto owned = std::make_shared<const std::vector<T>>(std::move(values));
    view_ = {owned->data(), owned->size()};
    owner_ = std::move(owned);
  }

  /// A view into memory that `owner` keeps alive.
  shared_array(std::span<const T> view, std::shared_ptr<const void> owner)
    : view_(view), owner_(std::move(owner)) {}

  std::span<const T> span() const { return view_; }
  const T* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  const T& operator[](size_t i) const { return view_[i]; }
  auto begin() const { return view_.begin(); }
  auto end() const { return view_.end(); }

  /// A copy of the values, e.g. to alter them.
  std::vector<T> to_vector() const { return {view_.begin(), view_.end()}; }

private:
  std::span<const T> view_;
  std::shared_ptr<const void> owner_;
};

} // namespace darcy::compute
