#include "compute/estimator/heads.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "tests/support/gradient_check.hpp"

namespace darcy::compute::estimator {
namespace {

using mat = nn::matrix_t<double>;

/// Labels that fit `h`: 0/1 for binary heads, a class id for multi-class heads, normal values
/// for regression heads.
mat random_labels(const head<double>& h, Eigen::Index rows, std::mt19937_64& rng) {
  mat y(rows, h.label_columns());
  Eigen::Index at = 0;
  for (auto& p : h.parts()) {
    std::uniform_int_distribution<uint32_t> cls{0, p.kind == head_kind::binary ? 1 : p.classes - 1};
    if (p.kind == head_kind::regression) {
      y.middleCols(at, p.label_dimension) = nn::normal<double>(rows, p.label_dimension, 1.0, rng);
      at += p.label_dimension;
      continue;
    }
    for (Eigen::Index r = 0; r < rows; ++r)
      y(r, at) = cls(rng);
    ++at;
  }
  return y;
}

TEST(head, the_loss_gradient_matches_finite_differences_for_every_head_and_a_multi_head) {
  struct {
    const char* what;
    std::vector<head_config> parts;
  } cases[] = {
    {"binary", {{.kind = head_kind::binary}}},
    {"multi-class", {{.kind = head_kind::multi_class, .classes = 4}}},
    {"regression", {{.kind = head_kind::regression, .label_dimension = 3}}},
    {"multi-head",
     {{.kind = head_kind::binary, .name = "click", .weight = 0.5},
      {.kind = head_kind::multi_class, .name = "genre", .classes = 3, .weight = 2},
      {.kind = head_kind::regression, .name = "dwell", .label_dimension = 2}}},
  };
  std::mt19937_64 rng{3};
  for (auto& c : cases) {
    auto h = head<double>::make(c.parts);
    ASSERT_TRUE(h) << c.what;
    mat logits = nn::normal<double>(5, h->logits_dimension(), 1.5, rng);
    mat labels = random_labels(*h, 5, rng);
    std::vector<double> weights{1, 0.5, 2, 0, 1};
    ASSERT_TRUE(h->loss(logits, labels, weights)) << c.what;
    mat analytic = h->gradient();
    test::expect_gradient(c.what, logits, analytic,
                          [&] { return *h->loss(logits, labels, weights); });
  }
}

TEST(head, hand_computed_losses_and_predictions) {
  struct {
    head_config part;
    mat logits, labels;
    double loss;
    mat predictions;
  } cases[] = {
    {{.kind = head_kind::binary},
     mat{{0.0}, {0.0}},
     mat{{1}, {0}},
     std::log(2.0),
     mat{{0.5}, {0.5}}},
    {{.kind = head_kind::multi_class, .classes = 3},
     mat{{1, 1, 1}},
     mat{{2}},
     std::log(3.0),
     mat{{1.0 / 3, 1.0 / 3, 1.0 / 3}}},
    {{.kind = head_kind::regression, .label_dimension = 2},
     mat{{1, 3}},
     mat{{0, 0}},
     5.0,
     mat{{1, 3}}},
  };
  for (auto& c : cases) {
    auto h = head<double>::make({c.part});
    ASSERT_TRUE(h);
    auto loss = h->loss(c.logits, c.labels);
    ASSERT_TRUE(loss);
    EXPECT_NEAR(*loss, c.loss, 1e-12);
    EXPECT_TRUE(h->predictions(c.logits).isApprox(c.predictions, 1e-12));
  }
}

TEST(head, metrics_follow_the_predictions) {
  auto h = head<double>::make({{.kind = head_kind::multi_class, .name = "genre", .classes = 3},
                               {.kind = head_kind::binary, .name = "click"}});
  ASSERT_TRUE(h);
  auto metrics = h->make_metrics();
  ASSERT_EQ(metrics.size(), 7u);
  EXPECT_EQ(metrics[0].name, "genre/accuracy");
  EXPECT_EQ(metrics[2].name, "click/auc_roc");
  // genre: argmax 0, 2, 1 against 0, 2, 2; click: logits −1, 2, 0.5 against 0, 1, 0.
  mat logits{{3, 0, 1, -1}, {0, 1, 2, 2}, {0, 2, 1, 0.5}};
  mat labels{{0, 0}, {2, 1}, {2, 0}};
  ASSERT_FALSE(h->update_metrics(metrics, logits, labels));
  EXPECT_NEAR(metrics[0].metric.value(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(metrics[1].metric.value(), 2.0 / 3, 1e-12) << "click accuracy";
  EXPECT_NEAR(metrics[2].metric.value(), 1.0, 1e-12) << "the positive scores highest";
  EXPECT_NEAR(metrics[4].metric.value(), 0.5, 1e-12) << "click precision";
}

TEST(head, bad_configs_and_batches_are_refused_with_clear_errors) {
  struct {
    const char* what;
    std::vector<head_config> parts;
  } configs[] = {
    {"no head", {}},
    {"one class", {{.kind = head_kind::multi_class, .classes = 1}}},
    {"dimension 0", {{.kind = head_kind::regression, .label_dimension = 0}}},
    {"negative weight", {{.kind = head_kind::binary, .weight = -1}}},
    {"two heads of one name", {{.name = "a"}, {.name = "a"}}},
  };
  for (auto& c : configs)
    EXPECT_TRUE(is(head<double>::make(c.parts).error(), errc::invalid_config)) << c.what;

  auto h = head<double>::make({{.kind = head_kind::multi_class, .classes = 3}});
  ASSERT_TRUE(h);
  mat good{{1, 2, 3}, {0, 0, 0}};
  std::vector<double> wrong_length{1}, negative{1, -1};
  struct {
    const char* what;
    mat logits, labels;
    std::span<const double> weights;
  } batches[] = {
    {"logits of 2 columns", mat{{1, 2}, {3, 4}}, mat{{0}, {1}}, {}},
    {"label 3 of 3 classes", good, mat{{0}, {3}}, {}},
    {"a fractional class id", good, mat{{0}, {1.5}}, {}},
    {"fewer label rows", good, mat{{0}}, {}},
    {"NaN logits", mat{{1, NAN, 3}, {0, 0, 0}}, mat{{0}, {1}}, {}},
    {"weights of the wrong length", good, mat{{0}, {1}}, wrong_length},
    {"a negative weight", good, mat{{0}, {1}}, negative},
  };
  ASSERT_TRUE(h->loss(good, mat{{2}, {1}}));
  mat before = h->gradient();
  for (auto& b : batches) {
    auto loss = h->loss(b.logits, b.labels, b.weights);
    ASSERT_FALSE(loss) << b.what;
    EXPECT_TRUE(is(loss.error(), errc::invalid_argument)) << b.what;
    EXPECT_EQ(h->gradient(), before) << b.what << " changed the gradient";
  }
  auto binary = head<double>::make({{.kind = head_kind::binary}});
  EXPECT_TRUE(is(binary->loss(mat{{0.1}}, mat{{2}}).error(), errc::invalid_argument));
}

} // namespace
} // namespace darcy::compute::estimator
