#include "apps/estimator/fashion_mnist.hpp"

#include <chrono>

#include "apps/progress/progress_hook.hpp"
#include "messages/error.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/readers.hpp"

namespace darcy::estimator_apps {

namespace est = ops::estimator;
namespace ce = compute::estimator;

caf::expected<fashion_mnist_data> load_fashion_mnist(const std::string& dir) {
  fashion_mnist_data d;
  for (auto [split, table] : {std::pair{"train", &d.train}, std::pair{"t10k", &d.test}}) {
    auto images = dir + "/" + split + "-images-idx3-ubyte.gz";
    auto labels = dir + "/" + split + "-labels-idx1-ubyte.gz";
    auto t = est::read_idx(images, labels, "pixels");
    if (!t) {
      if (is(t.error(), errc::not_found))
        return make_error(
          errc::not_found,
          context_of(t.error()) + " (install the Debian package dataset-fashion-mnist: make deps)");
      return std::move(t.error());
    }
    *table = std::make_shared<est::example_table>(std::move(*t));
  }
  return d;
}

caf::expected<est::model_fn> fashion_mnist_model(const fashion_mnist_options& o) {
  auto pixels = ce::numeric_column<float>("pixels", 784);
  if (!pixels)
    return make_error(pixels.error());
  if (o.hidden_units.empty())
    return est::linear_model(
      {.linear_columns = {*pixels}, .head = {.kind = ce::head_kind::multi_class, .classes = 10}});
  return est::dnn_model({.columns = {*pixels},
                         .hidden_units = o.hidden_units,
                         .head = {.kind = ce::head_kind::multi_class, .classes = 10}});
}

caf::expected<fashion_mnist_result> run_fashion_mnist(const fashion_mnist_options& o,
                                                      const fashion_mnist_data& data) {
  auto fn = fashion_mnist_model(o);
  if (!fn)
    return std::move(fn.error());
  est::estimator e{*fn,
                   {.model_dir = o.model_dir,
                    .seed = o.seed,
                    .threads = o.threads,
                    .optimizer = compute::adam_optimizer(static_cast<float>(o.learning_rate))}};
  auto train = [&]() -> caf::expected<std::unique_ptr<est::input_pipeline>> {
    auto d =
      est::make_dataset(data.train, {.batch_size = o.batch, .epochs = o.epochs, .seed = o.seed});
    if (!d)
      return d;
    return est::prefetch(std::move(*d), 4);
  };
  std::vector<est::hook_ptr> hooks{std::make_shared<est::nan_guard>()};
  if (!o.summary.empty())
    hooks.push_back(std::make_shared<est::summary_writer>(o.summary, 100));
  if (!o.quiet) {
    auto per_epoch = (data.train->rows() + o.batch - 1) / o.batch;
    hooks.push_back(std::make_shared<apps::progress_hook>(per_epoch * o.epochs));
  }
  auto start = std::chrono::steady_clock::now();
  auto r = e.train(train, 0, hooks);
  if (!r)
    return std::move(r.error());
  fashion_mnist_result result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.steps = r->steps;
  result.steps_per_second = double(r->steps) / result.seconds;
  auto test = e.evaluate(
    [&] { return est::make_dataset(data.test, {.batch_size = 1000, .shuffle = false}); });
  if (!test)
    return std::move(test.error());
  result.test_accuracy = test->at("accuracy");
  result.test_loss = test->at("loss");
  return result;
}

} // namespace darcy::estimator_apps
