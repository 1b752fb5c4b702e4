// An immutable float buffer that actors of one process share without copying (a reply of
// hundreds of megabytes costs a pointer), and that a message crossing nodes carries by value,
// as one blob of raw floats (messages/wire_blob.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/wire_blob.hpp"

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
  friend typename Inspector::result_type inspect(Inspector& f, shared_floats& x) {
    static const std::vector<float> none;
    if constexpr (wire::is_serializer<Inspector>) {
      auto order = wire::host_order();
      auto& values = x.values_ ? *x.values_ : none;
      return caf::error::eval([&] { return f(order); },
                              [&] { return wire::save(f, values.data(), values.size()); });
    } else if constexpr (wire::is_deserializer<Inspector>) {
      uint8_t order = 0;
      auto loaded = std::make_shared<std::vector<float>>();
      auto err = caf::error::eval([&] { return f(order); },
                                  [&] { return wire::load(f, *loaded, order); });
      x.values_ = std::move(loaded);
      return err;
    } else {
      return f(caf::meta::type_name("shared_floats"), x.values_ ? *x.values_ : none);
    }
  }

private:
  std::shared_ptr<const std::vector<float>> values_;
};

} // namespace darcy
