#include "stores/embedding/admission.hpp"

#include <gtest/gtest.h>

#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::stores {
namespace {

bool sight(admission_policy& p, const std::string& key) {
  return p.admit(key, compute::hash_key(key));
}

TEST(admission, FrequencyCutoffAdmitsAtTheNthSighting) {
  frequency_admission p{3};
  EXPECT_FALSE(sight(p, "x"));
  EXPECT_FALSE(sight(p, "x"));
  EXPECT_FALSE(sight(p, "y"));
  EXPECT_TRUE(sight(p, "x"));
  p.admitted("x");
  EXPECT_FALSE(sight(p, "x")) << "counting starts over once the key's row is gone";
}

TEST(admission, BloomFilterHasNoFalseNegativesAndBoundedFalsePositives) {
  const uint64_t capacity = 20000;
  bloom_admission p{2, capacity, 0.01};
  EXPECT_GE(p.hash_count(), 5u);
  for (uint64_t i = 0; i < capacity; ++i) {
    auto key = "seen-" + std::to_string(i);
    sight(p, key);
    ASSERT_TRUE(sight(p, key)) << "a key seen min_count times is always admitted";
  }
  // At design load, a key seen once is admitted with probability about fp_rate. Each probe
  // adds its own sighting, so probes stay few (5% of capacity) to keep the load as designed.
  int false_admissions = 0;
  const int probes = 1000;
  for (int i = 0; i < probes; ++i)
    false_admissions += sight(p, "once-" + std::to_string(i)) ? 1 : 0;
  EXPECT_LT(false_admissions, probes * 3 / 100) << false_admissions;
}

TEST(admission, FactoryValidatesItsConfig) {
  struct row {
    const char* name;
    admission_config cfg;
    bool ok;
  } rows[] = {
    {"none", {admission_kind::none}, true},
    {"frequency", {admission_kind::frequency, 5}, true},
    {"bloom", {admission_kind::bloom, 2, 1000, 0.05}, true},
    {"zero_count", {admission_kind::frequency, 0}, false},
    {"fp_one", {admission_kind::bloom, 2, 1000, 1.0}, false},
    {"no_capacity", {admission_kind::bloom, 2, 0, 0.01}, false},
    {"bloom_count_too_high", {admission_kind::bloom, 300, 1000, 0.01}, false},
  };
  for (auto& r : rows) {
    auto p = make_admission(r.cfg);
    EXPECT_EQ(static_cast<bool>(p), r.ok) << r.name;
    if (!p) {
      EXPECT_TRUE(is(error_of(p), errc::invalid_config)) << r.name;
    }
  }
}

} // namespace
} // namespace darcy::stores
