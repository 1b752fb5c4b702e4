// `darcy estimator fashion-mnist`: the canned DNN classifier on Fashion-MNIST, with its test
// accuracy as a JSON line. `darcy estimator plot`: a summary writer's curve as a PNG.
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "apps/estimator/summary_plot.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

void add_estimator_command(CLI::App& app, int& exit_code) {
  auto cmd = app.add_subcommand("estimator", "Estimator apps (train, evaluate, predict)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<fashion_mnist_options>();
  auto fm = cmd->add_subcommand("fashion-mnist", "A DNN classifier on Fashion-MNIST");
  fm->add_option("--data", o->data_dir, "Directory of the four IDX files (dataset-fashion-mnist)");
  fm->add_option("--epochs", o->epochs, "Passes over the 60,000 training images")
    ->check(CLI::Range(1, 1000));
  fm->add_option("--batch", o->batch, "Examples per step")->check(CLI::Range(1, 60000));
  fm->add_option("--hidden", o->hidden_units, "Hidden layer widths")->delimiter(',');
  fm->add_option("--learning-rate", o->learning_rate, "Adam learning rate");
  fm->add_option("--threads", o->threads, "Threads of the products")->check(CLI::Range(1, 256));
  fm->add_option("--seed", o->seed, "Seed of the weights and the shuffling");
  fm->add_option("--model-dir", o->model_dir, "Checkpoints (a rerun resumes from them)");
  fm->add_option("--summary", o->summary, "Append {step, loss, seconds} every 100 steps to this JSONL");
  fm->add_flag("--quiet", o->quiet, "No progress bar");
  fm->callback([o, &exit_code] {
    auto data = load_fashion_mnist(o->data_dir);
    if (!data) {
      exit_code = fail("estimator fashion-mnist: " + render(data.error()));
      return;
    }
    auto r = run_fashion_mnist(*o, *data);
    if (!r) {
      exit_code = fail("estimator fashion-mnist: " + render(r.error()));
      return;
    }
    std::cout << nlohmann::json{{"test_accuracy", r->test_accuracy},
                                {"test_loss", r->test_loss},
                                {"steps", r->steps},
                                {"seconds", r->seconds},
                                {"steps_per_second", r->steps_per_second},
                                {"epochs", o->epochs},
                                {"threads", o->threads}}
                   .dump()
              << std::endl;
  });

  auto summary = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("loss");
  auto plot = cmd->add_subcommand("plot", "Plot a summary writer's JSONL as OUT.tsv and OUT.png");
  plot->add_option("summary", *summary, "The JSONL file")->required();
  plot->add_option("--out", *out, "Output path without extension");
  plot->callback([summary, out, &exit_code] {
    auto points = plot_summary(*summary, *out);
    if (!points) {
      exit_code = fail("estimator plot: " + render(points.error()));
      return;
    }
    std::cout << *points << " points: " << *out << ".tsv, " << *out << ".png" << std::endl;
  });
}

} // namespace darcy::apps
