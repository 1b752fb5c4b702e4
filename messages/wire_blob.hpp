// Vectors of numbers on the wire as one contiguous blob (a length, then the raw bytes) instead of
// CAF's element-by-element encoding, which costs a virtual call and a byte swap per value. Blobs
// are in the sender's byte order, which leads the message; a reader of the other order swaps.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

namespace darcy::wire {

/// The byte order a message was written in: 1 little-endian, 2 big-endian.
inline uint8_t host_order() {
  return std::endian::native == std::endian::little ? 1 : 2;
}

template <class Inspector>
constexpr bool is_serializer = std::is_base_of_v<caf::serializer, Inspector>;

template <class Inspector>
constexpr bool is_deserializer = std::is_base_of_v<caf::deserializer, Inspector>;

/// Writes `n` values from `data` as one blob.
template <class T>
caf::error save(caf::serializer& f, const T* data, size_t n) {
  static_assert(std::is_arithmetic_v<T>);
  auto size = n;
  if (auto err = f.begin_sequence(size))
    return err;
  if (n > 0)
    if (auto err = f.apply_raw(n * sizeof(T), const_cast<T*>(data)))
      return err;
  return f.end_sequence();
}

template <class Container>
void swap_bytes(Container& xs) {
  for (auto& x : xs) {
    auto* p = reinterpret_cast<unsigned char*>(&x);
    std::reverse(p, p + sizeof(x));
  }
}

/// Reads a blob written by save() into `xs` (a std::vector or std::string of numbers), in
/// order `order` (host_order() of the writer). A length beyond the bytes left in the message
/// fails with caf::sec::end_of_stream before anything is allocated.
template <class Container>
caf::error load(caf::deserializer& f, Container& xs, uint8_t order) {
  using T = typename Container::value_type;
  static_assert(std::is_arithmetic_v<T>);
  size_t n = 0;
  if (auto err = f.begin_sequence(n))
    return err;
  if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&f);
      binary != nullptr && n > binary->remaining() / sizeof(T))
    return caf::sec::end_of_stream;
  xs.resize(n);
  if (n > 0)
    if (auto err = f.apply_raw(n * sizeof(T), xs.data()))
      return err;
  if (order != host_order() && sizeof(T) > 1)
    swap_bytes(xs);
  return f.end_sequence();
}

/// A vector of numbers that serializers write as one blob led by its byte order, and that
/// every other inspector (to_string) sees as the plain vector: `f(x.id, wire::blob(x.values))`.
template <class Container>
struct blob_ref {
  Container& xs;
};

template <class Container>
blob_ref<Container> blob(Container& xs) {
  return {xs};
}

template <class Inspector, class Container>
typename Inspector::result_type inspect(Inspector& f, blob_ref<Container>& x) {
  if constexpr (is_serializer<Inspector>) {
    auto order = host_order();
    return caf::error::eval([&] { return f(order); },
                            [&] { return save(f, x.xs.data(), x.xs.size()); });
  } else if constexpr (is_deserializer<Inspector>) {
    uint8_t order = 0;
    return caf::error::eval([&] { return f(order); }, [&] { return load(f, x.xs, order); });
  } else {
    return f(x.xs);
  }
}

} // namespace darcy::wire
