// Tests of apps/estimator/fashion_mnist.*: which model the options give.
#include "apps/estimator/fashion_mnist.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::estimator_apps {
namespace {

TEST(fashion_mnist_model, no_hidden_layer_is_the_linear_baseline_and_a_layer_of_zero_is_refused) {
  struct model_case {
    std::string what;
    std::vector<uint32_t> hidden;
    std::string error; // empty: the model is built
  };
  std::vector<model_case> cases = {
    {"the default DNN", {256, 128}, ""},
    {"no hidden layer: the linear baseline", {}, ""},
    {"a hidden layer of 0 units", {64, 0}, "a hidden layer of 0 units"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    fashion_mnist_options o;
    o.hidden_units = c.hidden;
    auto fn = fashion_mnist_model(o);
    if (c.error.empty()) {
      EXPECT_TRUE(fn) << render(fn.error());
      continue;
    }
    ASSERT_FALSE(fn);
    EXPECT_NE(render(fn.error()).find(c.error), std::string::npos) << render(fn.error());
  }
}

} // namespace
} // namespace darcy::estimator_apps
