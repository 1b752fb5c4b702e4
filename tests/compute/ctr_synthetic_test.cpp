// The CTR generator: a row is a function of (seed, index) alone, the click rate lands on its
// target, fresh ids are new, ids follow each field's cardinality, and bad options name
// themselves.
#include "compute/ctr_synthetic.hpp"

#include <set>

#include <gtest/gtest.h>

namespace darcy::compute {
namespace {

bool same(const ctr_synthetic_row& a, const ctr_synthetic_row& b) {
  return a.label == b.label && a.probability == b.probability && a.ints == b.ints &&
         a.int_present == b.int_present && a.cats == b.cats && a.cat_present == b.cat_present;
}

TEST(ctr_synthetic, a_row_depends_on_the_seed_and_its_index_alone) {
  ctr_generator a{{.seed = 3}}, b{{.seed = 3}}, other{{.seed = 4}};
  EXPECT_EQ(a.bias(), b.bias());
  for (uint64_t i : {0ull, 1ull, 999ull, 123456789ull}) {
    EXPECT_TRUE(same(a.row(i), b.row(i))) << i;
    EXPECT_FALSE(same(a.row(i), other.row(i))) << i;
  }
  // Asking out of order changes nothing.
  auto late = a.row(5);
  a.row(1);
  EXPECT_TRUE(same(late, a.row(5)));
}

TEST(ctr_synthetic, a_teacher_phase_moves_half_the_teacher_and_no_feature) {
  ctr_generator still{{.seed = 3, .max_ids = 50}},
    moved{{.seed = 3, .max_ids = 50, .teacher_phase = 1}};
  size_t changed = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    auto a = still.row(i), b = moved.row(i);
    EXPECT_EQ(a.cats, b.cats) << i;
    EXPECT_EQ(a.ints, b.ints) << i;
    changed += a.probability != b.probability ? 1 : 0;
  }
  EXPECT_GT(changed, 150u) << "the logits move";
  // A row whose drifting fields (the first 13) are all missing keeps its logit.
  ctr_synthetic_row r;
  r.cat_present.fill(false);
  for (size_t f = 13; f < ctr_cat_fields; ++f) {
    r.cat_present[f] = true;
    r.cats[f] = static_cast<uint32_t>(f * 7919);
  }
  EXPECT_EQ(still.logit(r), moved.logit(r));
}

TEST(ctr_synthetic, the_click_rate_is_within_two_percent_of_its_target) {
  for (auto rate : {0.25, 0.1}) {
    ctr_generator gen{{.seed = 1, .click_rate = rate}};
    double clicks = 0, probability = 0;
    constexpr int n = 40000;
    for (int i = 0; i < n; ++i) {
      auto r = gen.row(i);
      clicks += r.label;
      probability += r.probability;
    }
    EXPECT_NEAR(clicks / n, rate, 0.02 * rate + 3 * std::sqrt(rate / n)) << rate;
    EXPECT_NEAR(probability / n, rate, 0.02 * rate) << rate;
  }
}

TEST(ctr_synthetic, ids_stay_within_the_fields_cardinality_unless_fresh) {
  struct {
    double fresh_rate;
    size_t field;
    size_t min_distinct, max_distinct;
  } cases[] = {
    {0.0, 8, 2, 3},       // 3 ids in the Kaggle profile
    {0.0, 19, 2, 4},      // 4 ids
    {1.0, 8, 4500, 5000}, // each value present (95%) is new
  };
  for (auto& c : cases) {
    ctr_generator gen{{.fresh_rate = c.fresh_rate, .seed = 2}};
    std::set<uint32_t> ids;
    for (int i = 0; i < 5000; ++i) {
      auto r = gen.row(i);
      if (r.cat_present[c.field])
        ids.insert(r.cats[c.field]);
    }
    EXPECT_GE(ids.size(), c.min_distinct) << c.fresh_rate << " field " << c.field;
    EXPECT_LE(ids.size(), c.max_distinct) << c.fresh_rate << " field " << c.field;
  }
}

TEST(ctr_synthetic, the_profiles_have_the_published_cardinalities) {
  uint64_t kaggle = 0, terabyte = 0;
  for (auto n : ctr_cardinalities(ctr_profile::kaggle))
    kaggle += n;
  for (auto n : ctr_cardinalities(ctr_profile::terabyte))
    terabyte += n;
  EXPECT_EQ(ctr_cardinalities(ctr_profile::kaggle).size(), ctr_cat_fields);
  EXPECT_EQ(kaggle, 33762577u);
  EXPECT_EQ(terabyte, 187767399u);
}

TEST(ctr_synthetic, bad_options_name_themselves) {
  struct {
    ctr_generator_options o;
    const char* field;
  } cases[] = {
    {{.fresh_rate = -0.1}, "fresh_rate"}, {{.fresh_rate = 1.5}, "fresh_rate"},
    {{.zipf_exponent = 1.0}, "Zipf"},     {{.zipf_exponent = 0}, "Zipf"},
    {{.click_rate = 1.0}, "click_rate"},
  };
  for (auto& c : cases) {
    auto err = validate(c.o);
    EXPECT_EQ(err.code, errc::invalid_config) << c.field;
    EXPECT_NE(err.context.find(c.field), std::string::npos) << err.context;
  }
  EXPECT_FALSE(validate(ctr_generator_options{}));
}

} // namespace
} // namespace darcy::compute
