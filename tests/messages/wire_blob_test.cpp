#include "messages/wire_blob.hpp"

#include <cstdint>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>

#include "messages/serving/serving_values.hpp"
#include "tests/support/test_system.hpp"

namespace darcy {
namespace {

class wire_blob : public test::system_fixture {};

template <class T>
std::vector<char> serialized(caf::actor_system& sys, T& x) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  EXPECT_FALSE(sink(x));
  return buffer;
}

TEST_F(wire_blob, StructsWithBlobsRoundTripAndTheirValuesTakeTheirRawSize) {
  struct row {
    std::vector<uint64_t> ids;
    std::vector<float> scores;
  };
  std::vector<row> cases = {{{}, {}}, {{7}, {0.5f}}, {{1, 2, 1ull << 40}, {1, -2, 1e-30f}}};
  for (auto& c : cases) {
    shard_hits sent{3, c.ids, c.scores};
    auto buffer = serialized(sys, sent);
    shard_hits received;
    caf::binary_deserializer source{sys, buffer};
    ASSERT_FALSE(source(received));
    EXPECT_EQ(received.shard, 3u);
    EXPECT_EQ(received.ids, c.ids);
    EXPECT_EQ(received.scores, c.scores);
    // shard (4 bytes) + per blob: its byte order (1) and length (1) + the raw values.
    EXPECT_EQ(buffer.size(), 4 + 2 * 2 + c.ids.size() * 8 + c.scores.size() * 4);
  }
}

TEST_F(wire_blob, ATruncatedBlobIsRefused) {
  shard_query sent;
  sent.vector.assign(64, 1.0f);
  auto buffer = serialized(sys, sent);
  buffer.resize(buffer.size() - 8);
  shard_query received;
  caf::binary_deserializer source{sys, buffer};
  EXPECT_TRUE(source(received));
}

TEST(wire_blob_text, ToStringShowsThePlainValues) {
  shard_hits hits{1, {4, 5}, {0.5f, 0.25f}};
  auto text = caf::deep_to_string(hits);
  EXPECT_NE(text.find("[4, 5]"), std::string::npos) << text;
  EXPECT_NE(text.find("[0.5"), std::string::npos) << text;
}

} // namespace
} // namespace darcy
