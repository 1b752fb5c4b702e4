#include "messages/shared_floats.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>

#include "tests/support/test_system.hpp"

namespace darcy {
namespace {

TEST(shared_floats, CopiesShareOneBufferInProcess) {
  shared_floats a{std::vector<float>{1, 2, 3}};
  auto b = a;
  auto msg = caf::make_message(a);
  EXPECT_EQ(b.values().data(), a.values().data());
  EXPECT_EQ(msg.get_as<shared_floats>(0).values().data(), a.values().data());
}

TEST(shared_floats, DefaultIsEmpty) {
  shared_floats x;
  EXPECT_EQ(x.size(), 0u);
  EXPECT_TRUE(x.values().empty());
}

TEST(shared_floats, AllocatedBufferIsFilledThroughItsSpanAndSharedWithoutCopy) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4096}}) {
    auto [rows, span] = shared_floats::allocate(n);
    ASSERT_EQ(span.size(), n);
    for (size_t i = 0; i < n; ++i)
      span[i] = static_cast<float>(i) * 0.5f;
    auto msg = caf::make_message(rows);
    auto shared = msg.get_as<shared_floats>(0);
    EXPECT_EQ(shared.size(), n);
    EXPECT_EQ(shared.values().data(), span.data());
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(shared.values()[i], static_cast<float>(i) * 0.5f) << i;
  }
}

class shared_floats_wire : public test::system_fixture {};

TEST_F(shared_floats_wire, CrossesNodesByValue) {
  std::vector<std::vector<float>> cases = {{}, {0.5f}, {1, -2, 3.25f, 1e-30f, -0.0f}};
  for (auto& values : cases) {
    shared_floats sent{values};
    std::vector<char> buffer;
    caf::binary_serializer sink{sys, buffer};
    ASSERT_FALSE(sink(sent));
    shared_floats received;
    caf::binary_deserializer source{sys, buffer};
    ASSERT_FALSE(source(received));
    EXPECT_EQ(std::vector<float>(received.values().begin(), received.values().end()), values);
    if (!values.empty()) {
      EXPECT_NE(received.values().data(), sent.values().data());
    }
  }
}

TEST_F(shared_floats_wire, ValuesWrittenInTheOtherByteOrderAreSwapped) {
  std::vector<float> values = {1.5f, -2.0f, 3.25f};
  auto swapped = values;
  wire::swap_bytes(swapped);
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  uint8_t other = wire::host_order() == 1 ? 2 : 1;
  ASSERT_FALSE(sink(other));
  ASSERT_FALSE(wire::save(sink, swapped.data(), swapped.size()));
  shared_floats received;
  caf::binary_deserializer source{sys, buffer};
  ASSERT_FALSE(source(received));
  EXPECT_EQ(std::vector<float>(received.values().begin(), received.values().end()), values);
}

TEST_F(shared_floats_wire, ALengthBeyondTheMessageIsRefused) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  uint8_t order = wire::host_order();
  size_t huge = size_t{1} << 30;
  ASSERT_FALSE(sink(order));
  ASSERT_FALSE(sink.begin_sequence(huge));
  shared_floats received;
  caf::binary_deserializer source{sys, buffer};
  EXPECT_EQ(source(received), caf::sec::end_of_stream);
}

} // namespace
} // namespace darcy
