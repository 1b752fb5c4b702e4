// An immutable float buffer that actors of one process share without copying (a reply of
// hundreds of megabytes costs a pointer), and that a message crossing nodes carries by value,
// serialized like std::vector<float>.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace darcy {

class shared_floats {
public:
  shared_floats() = default;

  /// Shares `values`; whoever made them must not write them while any copy is alive.
  explicit shared_floats(std::shared_ptr<const std::vector<float>> values)
    : values_(std::move(values)) {}

  explicit shared_floats(std::vector<float> values)
    : values_(std::make_shared<const std::vector<float>>(std::move(values))) {}

  std::span<const float> values() const {
    return values_ ? std::span<const float>{*values_} : std::span<const float>{};
  }

  size_t size() const { return values_ ? values_->size() : 0; }

  template <class Inspector>
  friend typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type
  inspect(Inspector& f, shared_floats& x) {
    static const std::vector<float> none;
    return f(caf::meta::type_name("shared_floats"), x.values_ ? *x.values_ : none);
  }

  template <class Inspector>
  friend typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
  inspect(Inspector& f, shared_floats& x) {
    auto loaded = std::make_shared<std::vector<float>>();
    auto result = f(caf::meta::type_name("shared_floats"), *loaded);
    x.values_ = std::move(loaded);
    return result;
  }

private:
  std::shared_ptr<const std::vector<float>> values_;
};

} // namespace darcy
