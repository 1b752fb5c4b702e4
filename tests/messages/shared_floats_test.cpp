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

} // namespace
} // namespace darcy
