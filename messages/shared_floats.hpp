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
    : data_(values, values ? values->data() : nullptr), size_(values ? values->size() : 0) {}

  explicit shared_floats(std::vector<float> values)
    : shared_floats(std::make_shared<const std::vector<float>>(std::move(values))) {}

  /// A buffer of `n` floats left uninitialised, with the span to fill it through. The caller
  /// must write every value before the buffer is read or sent, and must not write it after.
  static std::pair<shared_floats, std::span<float>> allocate(size_t n) {
    std::shared_ptr<float[]> buffer{new float[n]};
    std::span<float> span{buffer.get(), n};
    shared_floats result;
    result.data_ = std::move(buffer);
    result.size_ = n;
    return {std::move(result), span};
  }

  std::span<const float> values() const { return {data_.get(), size_}; }

  size_t size() const { return size_; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, shared_floats& x) {
    if constexpr (wire::is_serializer<Inspector>) {
      auto order = wire::host_order();
      return caf::error::eval([&] { return f(order); },
                              [&] { return wire::save(f, x.data_.get(), x.size_); });
    } else if constexpr (wire::is_deserializer<Inspector>) {
      uint8_t order = 0;
      std::vector<float> loaded;
      auto err =
        caf::error::eval([&] { return f(order); }, [&] { return wire::load(f, loaded, order); });
      x = shared_floats{std::move(loaded)};
      return err;
    } else {
      std::vector<float> copy(x.values().begin(), x.values().end());
      return f(caf::meta::type_name("shared_floats"), copy);
    }
  }

private:
  std::shared_ptr<const float[]> data_;
  size_t size_ = 0;
};

} // namespace darcy
