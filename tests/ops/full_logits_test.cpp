#include "ops/full_logits.hpp"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/embedding_requests.hpp"

namespace darcy::ops {
namespace {

class full_logits_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s = std::move(*opened);
    for (int i = 0; i < 40; ++i)
      labels.push_back("label-" + std::to_string(i));
  }

  // Each key's row, read without counting a lookup.
  std::map<std::string, Eigen::RowVectorXf> table(const std::vector<std::string>& keys) {
    auto r = dynamic_embedding_lookup(*s, keys, cfg, "labels", false);
    EXPECT_TRUE(r) << render(r.error());
    std::map<std::string, Eigen::RowVectorXf> rows;
    for (size_t i = 0; r && i < keys.size(); ++i)
      rows[keys[i]] = r->rows.row(static_cast<Eigen::Index>(i));
    return rows;
  }

  de_config cfg = test::uniform_sgd_table(3);
  std::unique_ptr<session> s;
  std::vector<std::string> labels;
};

TEST_F(full_logits_test, logits_and_backward_equal_a_dense_reference_over_the_shards) {
  auto before = table(labels);
  matrix act(2, 3);
  act << 0.5f, -1, 2, 1, 0.25f, -0.5f;
  // Example 1's positive is new: the call gives it a row, and a column.
  auto r = full_logits(*s, {{"label-3"}, {"label-7", "fresh"}}, act, cfg, "labels", 100);
  ASSERT_TRUE(r) << render(r.error());
  ASSERT_EQ(r->keys.size(), labels.size() + 1);
  auto w = table(r->keys);
  for (Eigen::Index c = 0; c < static_cast<Eigen::Index>(r->keys.size()); ++c) {
    auto& key = r->keys[static_cast<size_t>(c)];
    if (key != "fresh") {
      ASSERT_TRUE(w.at(key).isApprox(before.at(key))) << key << " changed by the forward";
    }
    for (Eigen::Index b = 0; b < 2; ++b) {
      EXPECT_NEAR(r->logits(b, c), act.row(b).dot(w.at(key)), 1e-5) << key;
      float label = (b == 0 && key == "label-3")                       ? 1.0f
                    : (b == 1 && (key == "label-7" || key == "fresh")) ? 0.5f
                                                                       : 0.0f;
      EXPECT_EQ(r->labels(b, c), label) << key << " of example " << b;
    }
  }
  // Backward: SGD at 0.5 on dW = dlogitsᵀ · act; d(act) = dlogits · W.
  matrix dlogits = matrix::Zero(2, r->logits.cols());
  for (Eigen::Index c = 0; c < dlogits.cols(); ++c) {
    dlogits(0, c) = 0.01f * static_cast<float>(c);
    dlogits(1, c) = c % 3 == 0 ? -0.2f : 0.05f;
  }
  auto dact = r->backward(dlogits, 1);
  ASSERT_TRUE(dact) << render(dact.error());
  matrix expected_dact = matrix::Zero(2, 3);
  for (Eigen::Index c = 0; c < dlogits.cols(); ++c)
    expected_dact += dlogits.col(c) * w.at(r->keys[static_cast<size_t>(c)]);
  EXPECT_TRUE(dact->isApprox(expected_dact, 1e-5f)) << *dact << "\nvs\n" << expected_dact;
  auto after = table(r->keys);
  for (Eigen::Index c = 0; c < dlogits.cols(); ++c) {
    auto& key = r->keys[static_cast<size_t>(c)];
    Eigen::RowVectorXf grad = dlogits.col(c).transpose() * act;
    EXPECT_TRUE(after.at(key).isApprox(w.at(key) - 0.5f * grad, 1e-5f)) << key;
  }
}

TEST_F(full_logits_test, bad_input_fails_with_its_error_and_changes_no_row) {
  auto before = table(labels);
  matrix act = matrix::Ones(1, 3);
  matrix nan_act = act;
  nan_act(0, 1) = std::nanf("");
  struct bad_case {
    const char* what;
    std::vector<std::vector<std::string>> positives;
    matrix activations;
    uint64_t max_rows;
    errc expected;
  };
  std::vector<bad_case> cases{
    {"a table above max_rows", {{"label-1"}}, act, 39, errc::batch_too_large},
    {"no examples", {}, matrix{}, 100, errc::empty_batch},
    {"an example without positives", {{}}, act, 100, errc::invalid_argument},
    {"activations of another dim",
     {{"label-1"}},
     matrix::Ones(1, 4),
     100,
     errc::dimension_mismatch},
    {"NaN activations", {{"label-1"}}, nan_act, 100, errc::non_finite},
  };
  for (auto& c : cases) {
    auto r = full_logits(*s, c.positives, c.activations, cfg, "labels", c.max_rows);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.expected)) << c.what << ": " << render(r.error());
  }
  auto r = full_logits(*s, {{"label-1"}}, act, cfg, "labels", 100);
  ASSERT_TRUE(r) << render(r.error());
  matrix nan_grads = matrix::Zero(1, r->logits.cols());
  nan_grads(0, 2) = std::nanf("");
  EXPECT_TRUE(is(r->backward(matrix::Zero(2, r->logits.cols())).error(), errc::dimension_mismatch));
  EXPECT_TRUE(is(r->backward(nan_grads).error(), errc::non_finite));
  auto after = table(labels);
  for (auto& key : labels)
    EXPECT_TRUE(after.at(key) == before.at(key)) << key;
}

} // namespace
} // namespace darcy::ops
