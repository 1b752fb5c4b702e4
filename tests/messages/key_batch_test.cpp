#include "messages/embedding/key_batch.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "tests/support/test_system.hpp"

namespace darcy {
namespace {

key_batch batch_of(const std::vector<std::string>& keys) {
  key_batch b;
  uint64_t h = 1;
  for (auto& k : keys)
    b.push_back(k, h++ * 0x9E3779B97F4A7C15ULL);
  return b;
}

std::vector<std::string> keys_of(const key_batch& b) {
  std::vector<std::string> result;
  for (size_t i = 0; i < b.size(); ++i)
    result.emplace_back(b[i]);
  return result;
}

TEST(key_batch, CopiesShareOneBufferUntilOneIsWritten) {
  auto a = batch_of({"x", "y"});
  auto b = a;
  EXPECT_EQ(a[0].data(), b[0].data());
  b.push_back("z", 3);
  EXPECT_NE(a[0].data(), b[0].data());
  EXPECT_EQ(keys_of(a), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(keys_of(b), (std::vector<std::string>{"x", "y", "z"}));
}

TEST(key_batch, EachKeyOccursOnceUntilItsCountIsRaised) {
  auto b = batch_of({"x", "y"});
  EXPECT_FALSE(b.counted());
  EXPECT_TRUE(b.counts().empty());
  EXPECT_EQ(b.count(1), 1u);
  b.push_back("z", 3, 4);
  b.add_count(0, 2);
  b.push_back("w", 4);
  b.add_count(3, UINT32_MAX);
  ASSERT_TRUE(b.counted());
  EXPECT_EQ(std::vector<uint32_t>(b.counts().begin(), b.counts().end()),
            (std::vector<uint32_t>{3, 1, 4, UINT32_MAX}));
  auto plain = batch_of({"x", "y"});
  plain.push_back("z", 3);
  plain.push_back("w", 4);
  EXPECT_FALSE(plain == b);
}

class key_batch_wire : public test::system_fixture {
protected:
  std::vector<char> save(key_batch& b) {
    std::vector<char> buffer;
    caf::binary_serializer sink{sys, buffer};
    EXPECT_FALSE(sink(b));
    return buffer;
  }

  caf::error load(const std::vector<char>& buffer, key_batch& out) {
    caf::binary_deserializer source{sys, buffer};
    return source(out);
  }
};

TEST_F(key_batch_wire, KeysOfAnyBytesAndLengthRoundTrip) {
  std::vector<std::vector<std::string>> cases = {
    {},
    {""},
    {"", "", "a"},
    {std::string("\0", 1), std::string("a\0b\0", 4)},
    {std::string(65536, 'k'), "short", std::string(65536, '\0')},
  };
  for (auto& keys : cases) {
    auto sent = batch_of(keys);
    auto buffer = save(sent);
    key_batch received;
    ASSERT_FALSE(load(buffer, received)) << keys.size();
    EXPECT_EQ(keys_of(received), keys);
    EXPECT_TRUE(received == sent);
    for (size_t i = 0; i < keys.size(); ++i)
      EXPECT_EQ(received.hash(i), sent.hash(i));
  }
}

TEST_F(key_batch_wire, CountsRoundTripAndCountsOfAnotherLengthAreRefused) {
  key_batch sent = batch_of({"alpha", "beta"});
  sent.push_back("gamma", 3, 0);
  sent.add_count(1, 6);
  auto buffer = save(sent);
  key_batch received;
  ASSERT_FALSE(load(buffer, received));
  EXPECT_TRUE(received == sent);
  EXPECT_EQ(received.count(0), 1u);
  EXPECT_EQ(received.count(1), 7u);
  EXPECT_EQ(received.count(2), 0u);
  // The counts end the message: a one-byte length (3), then 3 * 4 bytes. Two counts for three
  // keys are refused.
  auto bad = buffer;
  ASSERT_EQ(bad[bad.size() - 13], 3);
  bad[bad.size() - 13] = 2;
  key_batch short_counts;
  EXPECT_TRUE(load(bad, short_counts));
  EXPECT_TRUE(short_counts.empty());
}

TEST_F(key_batch_wire, TruncatedOrInconsistentBatchesAreRefused) {
  auto sent = batch_of({"alpha", "beta", "gamma"});
  auto buffer = save(sent);
  for (size_t cut = 0; cut < buffer.size(); ++cut) {
    key_batch received;
    EXPECT_TRUE(load({buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(cut)}, received))
      << "cut at " << cut;
    EXPECT_TRUE(received.empty());
  }
  // The last offset must equal the byte count: change one byte of it (before the hashes and
  // the one-byte length of the empty counts).
  auto bad = buffer;
  bad[bad.size() - 1 - 3 * 8 - 8] ^= 1;
  key_batch received;
  EXPECT_TRUE(load(bad, received));
}

} // namespace
} // namespace darcy
