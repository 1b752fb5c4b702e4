#include "apps/estimator/brown_genre.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "apps/progress/progress_hook.hpp"
#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "stores/data/brown_corpus.hpp"

namespace darcy::estimator_apps {

namespace est = ops::estimator;
namespace ce = compute::estimator;

namespace {

/// Rows of passages under construction: words, successors and labels.
struct passage_rows {
  std::vector<std::vector<std::string>> words, next;
  std::vector<float> labels;

  void add(std::vector<std::string> passage, uint32_t label) {
    std::vector<std::string> successors(passage.begin() + 1, passage.end());
    successors.emplace_back("</s>");
    words.push_back(std::move(passage));
    next.push_back(std::move(successors));
    labels.push_back(static_cast<float>(label));
  }

  std::shared_ptr<est::example_table> table() {
    auto t = std::make_shared<est::example_table>();
    t->features["words"] = ce::feature_value::categorical(std::move(words));
    t->features["next_words"] = ce::feature_value::categorical(std::move(next));
    t->labels = Eigen::Map<est::matrix>(labels.data(), static_cast<Eigen::Index>(labels.size()), 1);
    return t;
  }
};

/// Appends the passages of the document at `path` (a sentence per non-empty line) to `out`:
/// whole sentences, each passage closed once it holds `passage_words` words; a last one of
/// fewer than half that is dropped.
caf::error add_document(const std::string& path, uint32_t label, uint32_t passage_words,
                        passage_rows& out) {
  auto text = base::read_file(path);
  if (!text)
    return std::move(text.error());
  std::istringstream lines{*text};
  std::vector<std::string> passage;
  for (std::string line; std::getline(lines, line);) {
    for (auto& w : stores::tagged_words(line))
      passage.push_back(std::move(w.word));
    if (passage.size() >= passage_words)
      out.add(std::exchange(passage, {}), label);
  }
  if (passage.size() >= std::max<size_t>(1, passage_words / 2))
    out.add(std::move(passage), label);
  return {};
}

/// A table of the embedding service, trained there by Adam (Adagrad at 0.1 learned little in
/// 4 epochs: the mean combiner makes each row's gradient small).
de_config service_table(std::string name, uint32_t dim, float learning_rate, uint64_t seed) {
  de_config c{.name = std::move(name), .dim = dim};
  c.optimizer = {optimizer_kind::adam, learning_rate};
  c.init.seed = seed;
  return c;
}

/// Opens an in-process embedding service for one model.
caf::expected<std::unique_ptr<ops::session>> local_service(const std::string& name) {
  return ops::session::open({.name = name, .threads = 1});
}

double accuracy_of(const std::map<std::string, double>& metrics) {
  return metrics.at("accuracy");
}

/// The epoch (0-based) a model's test accuracy is read at: its best on validation (the first
/// of equals), or the last without a validation split.
size_t chosen(const std::vector<epoch_accuracy>& epochs, bool validation) {
  if (!validation)
    return epochs.size() - 1;
  size_t best = 0;
  for (size_t i = 1; i < epochs.size(); ++i)
    if (epochs[i].validation > epochs[best].validation)
      best = i;
  return best;
}

} // namespace

nlohmann::json brown_genre_job_options(const brown_genre_options& o) {
  return {{"corpus", o.corpus},
          {"passage_words", o.passage_words},
          {"batch", o.batch},
          {"hash_buckets", o.hash_buckets},
          {"bigram_buckets", o.bigram_buckets},
          {"embedding_dim", o.embedding_dim},
          {"hidden", o.hidden_units},
          {"dropout", o.dropout},
          {"learning_rate", o.learning_rate},
          {"embedding_learning_rate", o.embedding_learning_rate},
          {"wide_learning_rate", o.wide_learning_rate},
          {"threads", o.threads},
          {"seed", o.seed}};
}

caf::expected<brown_genre_options> parse_brown_genre_options(const nlohmann::json& j,
                                                             brown_genre_options o) {
  try {
    o.corpus = j.value("corpus", o.corpus);
    o.passage_words = j.value("passage_words", o.passage_words);
    o.batch = j.value("batch", o.batch);
    o.hash_buckets = j.value("hash_buckets", o.hash_buckets);
    o.bigram_buckets = j.value("bigram_buckets", o.bigram_buckets);
    o.embedding_dim = j.value("embedding_dim", o.embedding_dim);
    o.hidden_units = j.value("hidden", o.hidden_units);
    o.dropout = j.value("dropout", o.dropout);
    o.learning_rate = j.value("learning_rate", o.learning_rate);
    o.embedding_learning_rate = j.value("embedding_learning_rate", o.embedding_learning_rate);
    o.wide_learning_rate = j.value("wide_learning_rate", o.wide_learning_rate);
    o.threads = j.value("threads", o.threads);
    o.seed = j.value("seed", o.seed);
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, std::string{"brown-genre job options: "} + e.what());
  }
  if (o.passage_words == 0 || o.batch == 0 || o.hash_buckets == 0 || o.embedding_dim == 0 ||
      o.threads == 0)
    return make_error(errc::invalid_config, "brown-genre job options: sizes must be > 0");
  if (!(o.dropout >= 0 && o.dropout < 1))
    return make_error(errc::invalid_config, "brown-genre job options: dropout must be in [0, 1)");
  for (auto [name, rate] : {std::pair{"embedding_learning_rate", o.embedding_learning_rate},
                            std::pair{"wide_learning_rate", o.wide_learning_rate}})
    if (!(rate > 0) || !std::isfinite(rate))
      return make_error(errc::invalid_config, std::string{"brown-genre job options: "} + name +
                                                " must be finite and positive");
  return o;
}

caf::expected<brown_genre_data> load_brown_genres(const std::string& corpus, uint32_t passage_words,
                                                  bool validation) {
  if (passage_words == 0)
    return make_error(errc::invalid_config, "brown-genre: passage_words must be >= 1");
  auto catalog = stores::read_brown_catalog(corpus);
  if (!catalog)
    return std::move(catalog.error());
  brown_genre_data data;
  data.categories = catalog->categories;
  if (data.categories.size() < 2)
    return make_error(errc::invalid_argument, corpus + "/cats.txt: fewer than 2 categories");
  passage_rows train, held_out, test;
  for (size_t d = 0; d < catalog->documents.size(); ++d) {
    auto& doc = catalog->documents[d];
    auto& rows = d % 10 == 9 ? test : validation && d % 10 == 4 ? held_out : train;
    if (auto err = add_document(doc.path, doc.label, passage_words, rows))
      return err;
  }
  if (train.labels.empty() || test.labels.empty() || (validation && held_out.labels.empty()))
    return make_error(errc::invalid_argument, corpus + ": too few passages for a train/" +
                                                (validation ? "validation/" : "") + "test split");
  data.train = train.table();
  data.test = test.table();
  if (validation)
    data.validation = held_out.table();
  return data;
}

caf::expected<est::model_fn> brown_genre_model(const brown_genre_options& o, size_t classes,
                                               ops::session& s) {
  auto words = ce::categorical_column_with_hash_bucket("words", o.hash_buckets);
  auto next = ce::categorical_column_with_hash_bucket("next_words", o.hash_buckets);
  if (!words || !next)
    return make_error(words ? next.error() : words.error());
  std::optional<ce::categorical_ptr> bigrams;
  if (o.bigram_buckets > 0) {
    auto crossed = ce::crossed_column({*words, *next}, o.bigram_buckets, ce::cross_kind::aligned);
    if (!crossed)
      return make_error(crossed.error());
    bigrams = *crossed;
  }
  // Every table lives in the embedding service; only the deep part's layers and the output
  // layer are dense variables.
  auto wide_table = [&](std::string name, uint32_t dim) {
    return service_table(std::move(name), dim, o.wide_learning_rate, o.seed);
  };
  auto classes32 = static_cast<uint32_t>(classes);
  auto deep = est::dynamic_embedding_column(
    s, "words",
    service_table("brown_genre_words", o.embedding_dim, o.embedding_learning_rate, o.seed));
  if (!deep)
    return std::move(deep.error());
  est::column_list wide;
  auto wide_words =
    est::dynamic_embedding_column(s, *words, wide_table("brown_genre_hashed", classes32));
  if (!wide_words)
    return std::move(wide_words.error());
  wide.push_back(*wide_words);
  if (bigrams) {
    auto wide_bigrams =
      est::dynamic_embedding_column(s, *bigrams, wide_table("brown_genre_bigrams", classes32));
    if (!wide_bigrams)
      return std::move(wide_bigrams.error());
    wide.push_back(*wide_bigrams);
  }
  return est::dnn_linear_combined_model(
    {.columns = {*deep},
     .hidden_units = o.hidden_units,
     .dropout = o.dropout,
     .linear_columns = std::move(wide),
     .head = {.kind = ce::head_kind::multi_class, .classes = classes32}});
}

caf::expected<brown_genre_result> run_brown_genre(const brown_genre_options& o,
                                                  const brown_genre_data& data) {
  if (o.validation && !data.validation)
    return make_error(errc::invalid_config,
                      "brown-genre: validation asked for, but the data has no validation split");
  brown_genre_result result;
  result.train_passages = data.train->rows();
  result.validation_passages = data.validation ? data.validation->rows() : 0;
  result.test_passages = data.test->rows();
  result.categories = data.categories.size();
  std::vector<size_t> counts(data.categories.size());
  for (Eigen::Index r = 0; r < data.train->labels.rows(); ++r)
    ++counts[static_cast<size_t>(data.train->labels(r, 0))];
  auto majority = std::max_element(counts.begin(), counts.end()) - counts.begin();
  size_t hits = 0;
  for (Eigen::Index r = 0; r < data.test->labels.rows(); ++r)
    hits += static_cast<size_t>(data.test->labels(r, 0)) == static_cast<size_t>(majority);
  result.majority_accuracy = double(hits) / double(data.test->rows());

  auto per_epoch = (data.train->rows() + o.batch - 1) / o.batch;
  auto evaluation = [](const std::shared_ptr<est::example_table>& table) {
    return [table] { return est::make_dataset(table, {.batch_size = 100, .shuffle = false}); };
  };
  // Trains `e` one epoch at a time (a fresh shuffle each), evaluating after every one; adds
  // the seconds spent training to `train_seconds`.
  double train_seconds = 0;
  auto fit = [&](est::estimator& e, const char* what,
                 std::vector<est::hook_ptr> extra) -> caf::expected<std::vector<epoch_accuracy>> {
    if (!o.quiet)
      std::cerr << "brown-genre: " << what << "\n";
    std::vector<epoch_accuracy> epochs;
    for (uint32_t epoch = 0; epoch < o.epochs; ++epoch) {
      auto train = [&, epoch]() -> caf::expected<std::unique_ptr<est::input_pipeline>> {
        auto d = est::make_dataset(data.train,
                                   {.batch_size = o.batch, .epochs = 1, .seed = o.seed + epoch});
        if (!d)
          return d;
        return est::prefetch(std::move(*d), 4);
      };
      std::vector<est::hook_ptr> hooks{std::make_shared<est::nan_guard>()};
      if (!o.quiet)
        hooks.push_back(std::make_shared<apps::progress_hook>(per_epoch * (epoch + 1)));
      hooks.insert(hooks.end(), extra.begin(), extra.end());
      auto start = std::chrono::steady_clock::now();
      if (auto r = e.train(train, 0, hooks); !r)
        return std::move(r.error());
      train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      epoch_accuracy a;
      for (auto [table, out] :
           {std::pair{data.validation, &a.validation}, std::pair{data.test, &a.test}}) {
        if (!table)
          continue;
        auto m = e.evaluate(evaluation(table));
        if (!m)
          return std::move(m.error());
        *out = accuracy_of(*m);
      }
      if (!o.quiet)
        std::cerr << "brown-genre: " << what << " epoch " << epoch + 1 << ": validation "
                  << a.validation << ", test " << a.test << "\n";
      epochs.push_back(a);
    }
    return epochs;
  };
  est::run_config cfg{.model_dir = o.model_dir,
                      .seed = o.seed,
                      .threads = o.threads,
                      .optimizer = compute::adam_optimizer(static_cast<float>(o.learning_rate))};

  // The baseline: a linear model on the hashed bag of words only.
  {
    auto service = local_service("brown-genre-bow");
    if (!service)
      return std::move(service.error());
    auto words = ce::categorical_column_with_hash_bucket("words", o.hash_buckets);
    if (!words)
      return make_error(words.error());
    auto classes = static_cast<uint32_t>(result.categories);
    auto bag = est::dynamic_embedding_column(
      **service, *words, service_table("bow", classes, o.wide_learning_rate, o.seed));
    if (!bag)
      return std::move(bag.error());
    auto fn = est::linear_model(
      {.linear_columns = {*bag}, .head = {.kind = ce::head_kind::multi_class, .classes = classes}});
    if (!fn)
      return std::move(fn.error());
    auto bow_cfg = cfg;
    bow_cfg.model_dir.clear();
    est::estimator bow{*fn, bow_cfg};
    auto epochs = fit(bow, "the bag-of-words linear baseline", {});
    if (!epochs)
      return std::move(epochs.error());
    auto at = chosen(*epochs, o.validation);
    result.bag_of_words_accuracy = (*epochs)[at].test;
    result.bag_of_words_epoch = static_cast<uint32_t>(at + 1);
    result.bag_of_words_epochs = std::move(*epochs);
  }

  auto session = local_service("brown-genre");
  if (!session)
    return std::move(session.error());
  auto fn = brown_genre_model(o, result.categories, **session);
  if (!fn)
    return std::move(fn.error());
  cfg.embeddings = session->get();
  est::estimator e{*fn, cfg};
  std::vector<est::hook_ptr> extra;
  if (!o.summary.empty())
    extra.push_back(std::make_shared<est::summary_writer>(o.summary, 100));
  train_seconds = 0;
  auto epochs = fit(e, "Wide & Deep", extra);
  if (!epochs)
    return std::move(epochs.error());
  result.steps = e.global_step();
  result.steps_per_second = double(result.steps) / train_seconds;
  auto at = chosen(*epochs, o.validation);
  result.test_accuracy = (*epochs)[at].test;
  result.epoch = static_cast<uint32_t>(at + 1);
  result.epochs = std::move(*epochs);
  return result;
}

} // namespace darcy::estimator_apps
