// `darcy estimator fashion-mnist`: the canned DNN classifier on Fashion-MNIST, with its test
// accuracy as a JSON line; with DARCY_CONFIG (or --task-type), this process's role of the
// distributed job instead. `darcy estimator brown-genre`: Wide & Deep on Brown passages, with
// its baselines, locally or as a role the same way. `darcy estimator sparse2label`: keywords
// of Brown passages through the sampled-softmax head, in rounds of growing data.
// `darcy estimator ctr` (estimator_ctr_command.cpp): DLRM or Wide & Deep on Criteo-format files.
// `darcy estimator plot`: a summary writer's curve as a PNG.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.hpp"
#include "apps/cli/estimator_roles.hpp"
#include "apps/estimator/brown_genre.hpp"
#include "apps/estimator/estimator_jobs.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "apps/estimator/sparse2label.hpp"
#include "apps/estimator/summary_plot.hpp"
#include "messages/error.hpp"
#include "runtime/process/machine.hpp"

namespace darcy::apps {

void add_estimator_command(CLI::App& app, int& exit_code) {
  auto cmd = app.add_subcommand("estimator", "Estimator apps (train, evaluate, predict)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<estimator_apps::fashion_mnist_options>();
  auto fm = cmd->add_subcommand("fashion-mnist", "A DNN classifier on Fashion-MNIST");
  fm->add_option("--data", o->data_dir, "Directory of the four IDX files (dataset-fashion-mnist)");
  auto roles = std::make_shared<role_flags>();
  roles->local_only.push_back(
    fm->add_option("--epochs", o->epochs, "Passes over the 60,000 training images")
      ->check(CLI::Range(1, 1000)));
  fm->add_option("--batch", o->batch, "Examples per step")->check(CLI::Range(1, 60000));
  auto hidden = fm->add_option("--hidden", o->hidden_units, "Hidden layer widths")->delimiter(',');
  fm->add_flag_callback(
      "--linear", [o] { o->hidden_units.clear(); },
      "The linear baseline: softmax regression on the pixels, no hidden layer")
    ->excludes(hidden);
  fm->add_option("--learning-rate", o->learning_rate, "Adam learning rate");
  fm->add_option("--threads", o->threads, "Threads of the products")->check(CLI::Range(1, 256));
  fm->add_option("--seed", o->seed, "Seed of the weights and the shuffling");
  fm->add_option("--model-dir", o->model_dir, "Checkpoints (a rerun resumes from them)");
  fm->add_option("--summary", o->summary,
                 "Append {step, loss, seconds} every 100 steps to this JSONL (a chief: at each "
                 "checkpoint, the workers' mean loss)");
  fm->add_flag("--quiet", o->quiet, "No progress bar");
  add_role_flags(fm, *roles);
  fm->callback([o, roles, &exit_code] {
    if (run_as_role(*roles, "fashion-mnist",
                    {{"data", o->data_dir},
                     {"batch", o->batch},
                     {"hidden", o->hidden_units},
                     {"learning_rate", o->learning_rate},
                     {"threads", o->threads},
                     {"seed", o->seed}},
                    o->model_dir, o->summary, o->threads, exit_code))
      return;
    auto data = estimator_apps::load_fashion_mnist(o->data_dir);
    if (!data) {
      exit_code = fail("estimator fashion-mnist", data.error());
      return;
    }
    auto r = estimator_apps::run_fashion_mnist(*o, *data);
    if (!r) {
      exit_code = fail("estimator fashion-mnist", r.error());
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

  auto bg = std::make_shared<estimator_apps::brown_genre_options>();
  bg->corpus = "build/data/brown";
  auto genre =
    cmd->add_subcommand("brown-genre", "Wide & Deep on Brown passages to their category");
  genre->add_option("--corpus", bg->corpus, "Brown corpus directory (make demo fetches it)");
  genre->add_option("--passage-words", bg->passage_words, "Words per passage (at least)")
    ->check(CLI::Range(1, 100000));
  auto genre_roles = std::make_shared<role_flags>();
  genre_roles->local_only.push_back(
    genre->add_option("--epochs", bg->epochs, "Passes over the training passages")
      ->check(CLI::Range(1, 1000)));
  genre->add_option("--batch", bg->batch, "Passages per step")->check(CLI::Range(1, 100000));
  genre->add_option("--hash-buckets", bg->hash_buckets, "Buckets of the hashed words")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  genre
    ->add_option("--bigram-buckets", bg->bigram_buckets,
                 "Buckets of the crossed bigrams (0: no bigram cross)")
    ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 24));
  genre
    ->add_option("--embedding-dim", bg->embedding_dim, "Width of the raw words' dynamic embedding")
    ->check(CLI::Range(1, 4096));
  genre->add_option("--hidden", bg->hidden_units, "Hidden layer widths of the deep part")
    ->delimiter(',');
  genre->add_option("--dropout", bg->dropout, "Dropout after each hidden layer of the deep part")
    ->check(CLI::Range(0.0, 0.99));
  genre->add_option("--learning-rate", bg->learning_rate,
                    "Adam learning rate of the dense variables");
  genre->add_option("--embedding-learning-rate", bg->embedding_learning_rate,
                    "Adam learning rate of the deep part's word table (in the embedding service)");
  genre->add_option("--wide-learning-rate", bg->wide_learning_rate,
                    "Adam learning rate of the wide part's tables and the baseline's (in the "
                    "embedding service)");
  genre_roles->local_only.push_back(genre->add_flag(
    "!--no-validation", bg->validation,
    "Read each model's test accuracy after the last epoch, not at its best epoch on a "
    "validation split (every tenth training document)"));
  genre->add_option("--threads", bg->threads, "Threads of the products")->check(CLI::Range(1, 256));
  genre->add_option("--seed", bg->seed, "Seed of the weights and the shuffling");
  genre->add_option("--model-dir", bg->model_dir, "Checkpoints (a rerun resumes from them)");
  genre->add_option("--summary", bg->summary,
                    "Append {step, loss, seconds} of Wide & Deep every 100 steps to this JSONL (a "
                    "chief: at each checkpoint, the workers' mean loss)");
  genre->add_flag("--quiet", bg->quiet, "No progress bar");
  add_role_flags(genre, *genre_roles);
  genre->callback([bg, genre_roles, &exit_code] {
    if (run_as_role(*genre_roles, "brown-genre", brown_genre_job_options(*bg), bg->model_dir,
                    bg->summary, bg->threads, exit_code))
      return;
    auto data = estimator_apps::load_brown_genres(bg->corpus, bg->passage_words, bg->validation);
    if (!data) {
      exit_code = fail("estimator brown-genre", data.error());
      return;
    }
    auto r = estimator_apps::run_brown_genre(*bg, *data);
    if (!r) {
      exit_code = fail("estimator brown-genre", r.error());
      return;
    }
    auto per_epoch = [](const std::vector<estimator_apps::epoch_accuracy>& epochs) {
      auto out = nlohmann::json::array();
      for (auto& e : epochs)
        out.push_back({{"validation", e.validation}, {"test", e.test}});
      return out;
    };
    std::cout << nlohmann::json{{"test_accuracy", r->test_accuracy},
                                {"epoch", r->epoch},
                                {"per_epoch", per_epoch(r->epochs)},
                                {"bag_of_words_per_epoch", per_epoch(r->bag_of_words_epochs)},
                                {"majority_accuracy", r->majority_accuracy},
                                {"bag_of_words_accuracy", r->bag_of_words_accuracy},
                                {"bag_of_words_epoch", r->bag_of_words_epoch},
                                {"categories", r->categories},
                                {"train_passages", r->train_passages},
                                {"validation_passages", r->validation_passages},
                                {"test_passages", r->test_passages},
                                {"steps", r->steps},
                                {"steps_per_second", r->steps_per_second},
                                {"epochs", bg->epochs},
                                {"threads", bg->threads}}
                   .dump()
              << std::endl;
  });

  add_estimator_ctr_command(cmd, exit_code);

  auto sl = std::make_shared<estimator_apps::sparse2label_options>();
  sl->corpus = "build/data/brown";
  sl->model_dir = "build/sparse2label";
  auto labels = cmd->add_subcommand(
    "sparse2label",
    "Brown passages to their keywords (sampled softmax), one category added per round");
  labels->add_option("--corpus", sl->corpus, "Brown corpus directory (make demo fetches it)");
  labels->add_option("--passage-words", sl->passage_words, "Words per passage (at least)")
    ->check(CLI::Range(1, 100000));
  labels->add_option("--keywords", sl->keywords, "Labels per passage, at most")
    ->check(CLI::Range(1, 100));
  labels->add_option("--rounds", sl->rounds, "Rounds, one category each (0: every category)");
  labels->add_option("--epochs", sl->epochs, "Passes over the data so far, per round")
    ->check(CLI::Range(1, 1000));
  labels->add_option("--batch", sl->batch, "Passages per step")->check(CLI::Range(1, 100000));
  labels->add_option("--embedding-dim", sl->embedding_dim, "Width of the words' and labels' rows")
    ->check(CLI::Range(1, 4096));
  labels->add_option("--hidden", sl->hidden_units, "Width of the hidden layer")
    ->check(CLI::Range(1, 65536));
  labels->add_option("--num-sampled", sl->num_sampled, "Sampled negatives per step")
    ->check(CLI::Range(1, 100000));
  labels->add_option("--full-logits-below", sl->full_logits_below,
                     "Score every label while the label table holds at most this many rows "
                     "(0: always sample)");
  labels->add_flag("--approximate-top-k", sl->approximate_top_k,
                   "Keep an ANN index over the label table and predict from it");
  labels->add_option("--learning-rate", sl->learning_rate,
                     "Adam learning rate of the dense layers");
  labels->add_option("--embedding-learning-rate", sl->embedding_learning_rate,
                     "Adam learning rate of the words' and labels' tables");
  labels->add_option("--threads", sl->threads, "Threads of the products")
    ->check(CLI::Range(1, 256));
  labels->add_option("--seed", sl->seed, "Seed of the weights and the shuffling");
  labels->add_option("--model-dir", sl->model_dir, "Checkpoints, a directory per round");
  labels->add_option("--out", sl->out, "Report path without extension (OUT.tsv, OUT.png)");
  labels->add_option("--export-dir", sl->export_dir,
                     "Export the last round's model here, for darcy serve");
  labels->add_flag("--quiet", sl->quiet, "No progress bar");
  labels->callback([sl, &exit_code] {
    auto data = estimator_apps::load_sparse2label(sl->corpus, sl->passage_words, sl->keywords);
    if (!data) {
      exit_code = fail("estimator sparse2label", data.error());
      return;
    }
    auto rounds = estimator_apps::run_sparse2label(*sl, *data);
    if (!rounds) {
      exit_code = fail("estimator sparse2label", rounds.error());
      return;
    }
    for (auto& r : *rounds)
      std::cout << nlohmann::json{{"round", r.round},
                                  {"category", r.category},
                                  {"train_passages", r.train_passages},
                                  {"label_rows", r.label_rows},
                                  {"word_rows", r.word_rows},
                                  {"embedding_bytes", r.embedding_bytes},
                                  {"recall_at_10", r.recall_at_10},
                                  {"popular_recall_at_10", r.popular_recall_at_10},
                                  {"seconds", r.seconds}}
                     .dump()
                << std::endl;
    std::cout << "report: " << sl->out << ".tsv, " << sl->out << ".png" << std::endl;
  });

  auto summary = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("loss");
  auto plot = cmd->add_subcommand("plot", "Plot a summary writer's JSONL as OUT.tsv and OUT.png");
  plot->add_option("summary", *summary, "The JSONL file")->required();
  plot->add_option("--out", *out, "Output path without extension");
  plot->callback([summary, out, &exit_code] {
    auto plot = estimator_apps::plot_summary(*summary, *out);
    if (!plot) {
      exit_code = fail("estimator plot", plot.error());
      return;
    }
    std::cout << plot->points << " points: " << *out << ".tsv, " << *out << ".png";
    if (plot->torn_lines > 0 || plot->non_finite > 0)
      std::cout << " (skipped: torn lines " << plot->torn_lines << ", non-finite losses "
                << plot->non_finite << ")";
    std::cout << std::endl;
  });
}

} // namespace darcy::apps
