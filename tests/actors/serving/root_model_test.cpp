#include "actors/serving/root_model.hpp"

#include <gtest/gtest.h>

#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::actors {
namespace {

constexpr uint32_t model_dim = 8;

/// A WALS export of 40 items and 30 users with names, 3 user features and 2 item features,
/// of value 0.5.
stores::export_input features_input() {
  stores::export_input in;
  in.config.lambda = 0.1;
  in.config.sigma = 0.5;
  in.config.alpha = 2;
  in.config.feature_value = 0.5;
  in.items = test::gaussian_matrix(40, model_dim, 1);
  for (int i = 0; i < 40; ++i)
    in.item_names.push_back("item-" + std::to_string(i));
  in.users = test::gaussian_matrix(30, model_dim, 4);
  for (int u = 0; u < 30; ++u)
    in.user_names.push_back("user-" + std::to_string(u));
  in.user_features = test::gaussian_matrix(3, model_dim, 2);
  in.user_feature_names = {"age:30", "country:fr", "friend:7"};
  in.item_features = test::gaussian_matrix(2, model_dim, 3);
  in.item_feature_names = {"rock", "pop"};
  in.index = {.lists = 2, .seed = 3};
  return in;
}

/// What compute::project gives a row of these rows of `other` (value 1) and of `features`
/// (value 0.5), against the Gramian of both.
std::vector<float> expected_projection(const compute::row_matrix& other,
                                       const compute::row_matrix& features,
                                       const std::vector<int>& other_rows,
                                       const std::vector<int>& feature_rows) {
  compute::row_matrix gram = other.transpose() * other;
  gram += features.transpose() * features;
  compute::row_matrix known(static_cast<Eigen::Index>(other_rows.size() + feature_rows.size()),
                            model_dim);
  std::vector<float> values;
  Eigen::Index r = 0;
  for (auto i : other_rows) {
    known.row(r++) = other.row(i);
    values.push_back(1);
  }
  for (auto f : feature_rows) {
    known.row(r++) = features.row(f);
    values.push_back(0.5f);
  }
  std::vector<uint32_t> ids(values.size());
  for (uint32_t i = 0; i < ids.size(); ++i)
    ids[i] = i;
  wals_params p;
  p.dim = model_dim;
  p.lambda = 0.1f;
  p.sigma = 0.5f;
  p.alpha = 2;
  auto projected =
    compute::project({known.data(), values.size(), model_dim},
                     {gram.data(), static_cast<size_t>(gram.size())}, ids, values, p);
  EXPECT_TRUE(projected);
  return projected ? *projected : std::vector<float>{};
}

class root_model_test : public ::testing::Test {
protected:
  void SetUp() override {
    auto v = stores::write_export(tmp_.path() + "/m", features_input(), 1);
    ASSERT_TRUE(v) << render(v.error());
    auto m = root_model::load(tmp_.path() + "/m", "");
    ASSERT_TRUE(m) << render(m.error());
    model_ = std::move(*m);
  }
  static topk_request new_user(std::vector<std::string> items, std::vector<std::string> features) {
    topk_request r;
    r.kind = query_kind::items;
    r.items = std::move(items);
    r.features = std::move(features);
    return r;
  }
  test::temp_dir tmp_{"root_model"};
  std::optional<root_model> model_;
};

TEST_F(root_model_test, ANewUserIsProjectedFromItemsFeaturesOrBoth) {
  struct projection_case {
    const char* name;
    std::vector<std::string> items;
    std::vector<std::string> features;
    std::vector<int> item_rows;
    std::vector<int> feature_rows;
  };
  const projection_case cases[] = {
    {"items", {"item-3", "item-17"}, {}, {3, 17}, {}},
    {"features", {}, {"friend:7", "age:30"}, {}, {2, 0}},
    {"both, unknown ones skipped",
     {"item-3", "no-such-item"},
     {"country:fr", "no-such-feature"},
     {3},
     {1}},
  };
  auto in = features_input();
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto query = model_->query_of(new_user(c.items, c.features));
    ASSERT_TRUE(query) << render(query.error());
    auto expected = expected_projection(in.items, in.user_features, c.item_rows, c.feature_rows);
    ASSERT_EQ(query->size(), expected.size());
    for (size_t d = 0; d < expected.size(); ++d)
      EXPECT_NEAR((*query)[d], expected[d], 1e-4f) << d;
  }
}

TEST_F(root_model_test, ANewUserOfNothingOrOfNothingKnownIsAClearError) {
  struct bad_case {
    const char* name;
    topk_request request;
    errc expected;
    const char* says;
  };
  auto values_without_items = new_user({}, {"age:30"});
  values_without_items.values = {2};
  const bad_case cases[] = {
    {"neither items nor features", new_user({}, {}), errc::invalid_argument,
     "at least one item or feature"},
    {"nothing known", new_user({"x"}, {"y", "z"}), errc::not_found,
     "none of the 1 items and 2 features"},
    {"values without items", values_without_items, errc::invalid_argument, "one value per item"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto query = model_->query_of(c.request);
    ASSERT_FALSE(query);
    EXPECT_TRUE(is(query.error(), c.expected)) << render(query.error());
    EXPECT_NE(render(query.error()).find(c.says), std::string::npos) << render(query.error());
  }
}

TEST_F(root_model_test, ANewItemIsProjectedFromUsersFeaturesOrBothAgainstTheUsersGramian) {
  struct item_case {
    const char* name;
    std::vector<std::string> users;
    std::vector<std::string> features;
    std::vector<int> user_rows;
    std::vector<int> feature_rows;
  };
  const item_case cases[] = {
    {"users", {"user-4", "user-20"}, {}, {4, 20}, {}},
    {"features", {}, {"pop"}, {}, {1}},
    {"both, unknown ones skipped", {"user-9", "nobody"}, {"rock", "jazz"}, {9}, {0}},
  };
  auto in = features_input();
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto vector = model_->project_item({"new-song", c.features, c.users, {}});
    ASSERT_TRUE(vector) << render(vector.error());
    auto expected = expected_projection(in.users, in.item_features, c.user_rows, c.feature_rows);
    ASSERT_EQ(vector->size(), expected.size());
    for (size_t d = 0; d < expected.size(); ++d)
      EXPECT_NEAR((*vector)[d], expected[d], 1e-4f) << d;
  }
  EXPECT_TRUE(model_->has_item("item-3"));
  EXPECT_FALSE(model_->has_item("new-song"));
}

TEST_F(root_model_test, ANewItemOfNothingOrOfNothingKnownIsAClearError) {
  struct bad_case {
    const char* name;
    new_item item;
    errc expected;
    const char* says;
  };
  const bad_case cases[] = {
    {"neither users nor features",
     {"x", {}, {}, {}},
     errc::invalid_argument,
     "at least one feature or user"},
    {"nothing known",
     {"x", {"jazz"}, {"nobody"}, {}},
     errc::not_found,
     "none of its 1 users and 1 features"},
    {"values of another count",
     {"x", {}, {"user-1"}, {1, 2}},
     errc::invalid_argument,
     "one value per user"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto vector = model_->project_item(c.item);
    ASSERT_FALSE(vector);
    EXPECT_TRUE(is(vector.error(), c.expected)) << render(vector.error());
    EXPECT_NE(render(vector.error()).find(c.says), std::string::npos) << render(vector.error());
  }
}

TEST(root_model, AModelWithoutUsersCannotProjectANewItem) {
  test::temp_dir tmp{"root_model_no_users"};
  auto in = features_input();
  in.users.resize(0, model_dim);
  in.user_names.clear();
  in.item_features.resize(0, model_dim);
  in.item_feature_names.clear();
  ASSERT_TRUE(stores::write_export(tmp.path() + "/m", std::move(in), 1));
  auto m = root_model::load(tmp.path() + "/m", "");
  ASSERT_TRUE(m) << render(m.error());
  auto vector = m->project_item({"x", {}, {"user-1"}, {}});
  ASSERT_FALSE(vector);
  EXPECT_TRUE(is(vector.error(), errc::unsupported)) << render(vector.error());
}

} // namespace
} // namespace darcy::actors
