#include "apps/estimator/sparse2label.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "apps/progress/plot.hpp"
#include "apps/progress/progress_hook.hpp"
#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "ops/estimator/estimator.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/estimator/layers.hpp"
#include "ops/estimator/sampled_softmax_head.hpp"
#include "stores/data/brown_corpus.hpp"

namespace darcy::estimator_apps {

namespace est = ops::estimator;
namespace ce = compute::estimator;

namespace {

using token_list = std::vector<std::pair<std::string, std::string>>;
using string_rows = std::vector<std::vector<std::string>>;

constexpr const char* words_table = "sparse2label_words";
constexpr const char* labels_table = "sparse2label_keywords";

/// The tag without Brown's title (-tl), headline (-hl) and possessive ($) marks.
std::string base_tag(const std::string& tag) {
  auto base = tag.substr(0, tag.find('-'));
  if (!base.empty() && base.back() == '$')
    base.pop_back();
  return base;
}

bool is_keyword_candidate(const std::string& word, const std::string& tag) {
  static const std::set<std::string> nouns{"nn", "nns"};
  return nouns.count(base_tag(tag)) > 0 && word.size() >= 3 &&
         std::all_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

bool has_letter(const std::string& word) {
  return std::any_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

/// The passages of one document: whole sentences, each passage closed once it holds
/// `passage_words` tokens; a last one of fewer than half that is dropped.
caf::expected<std::vector<token_list>> read_passages(const std::string& path,
                                                     uint32_t passage_words) {
  auto text = base::read_file(path);
  if (!text)
    return std::move(text.error());
  std::vector<token_list> out;
  token_list passage;
  std::istringstream lines{*text};
  for (std::string line; std::getline(lines, line);) {
    for (auto& w : stores::tagged_words(line))
      passage.emplace_back(std::move(w.word), std::move(w.tag));
    if (passage.size() >= passage_words)
      out.push_back(std::exchange(passage, {}));
  }
  if (passage.size() >= std::max<size_t>(1, passage_words / 2))
    out.push_back(std::move(passage));
  return out;
}

struct rows_under_construction {
  string_rows words, keywords;

  std::shared_ptr<est::example_table> table() {
    auto t = std::make_shared<est::example_table>();
    t->features["words"] = ce::feature_value::categorical(std::move(words));
    t->features["keywords"] = ce::feature_value::categorical(std::move(keywords));
    return t;
  }
};

/// The rows of `tables`, one after the other.
std::shared_ptr<est::example_table> concatenate(
  const std::vector<const est::example_table*>& tables) {
  rows_under_construction rows;
  for (auto* t : tables) {
    auto& w = t->features.at("words").strings;
    auto& k = t->features.at("keywords").strings;
    rows.words.insert(rows.words.end(), w.begin(), w.end());
    rows.keywords.insert(rows.keywords.end(), k.begin(), k.end());
  }
  return rows.table();
}

/// A table of the embedding service, trained there by Adam.
de_config service_table(const char* name, const sparse2label_options& o, uint64_t seed) {
  de_config c{.name = name, .dim = o.embedding_dim};
  c.optimizer = {optimizer_kind::adam, static_cast<float>(o.embedding_learning_rate)};
  c.init.seed = seed;
  return c;
}

/// words → mean of their dynamic embeddings → ReLU layer → output of the label table's width,
/// scored against every keyword by the sampled-softmax head.
caf::expected<est::model_fn> sparse2label_model(const sparse2label_options& o, ops::session& s) {
  auto words = est::dynamic_embedding_column(s, "words", service_table(words_table, o, o.seed));
  if (!words)
    return std::move(words.error());
  auto labels = service_table(labels_table, o, o.seed + 1);
  labels.ann.enabled = o.approximate_top_k;
  auto head = est::sampled_softmax_head::make(s, {.label_key = "keywords",
                                                  .labels = labels,
                                                  .num_sampled = o.num_sampled,
                                                  .full_logits_below = o.full_logits_below,
                                                  .k = 10});
  if (!head)
    return std::move(head.error());
  auto input = std::make_shared<ce::input_layer<float>>(std::vector<ce::dense_ptr<float>>{*words});
  return est::model_fn{[input, head = *head, hidden = o.hidden_units, dim = o.embedding_dim](
                         est::model_context& ctx, const est::batch& b,
                         const est::params&) -> caf::expected<est::estimator_spec> {
    auto x = est::input_layer(ctx, b.features, *input);
    if (!x)
      return std::move(x.error());
    auto h = est::relu(ctx, est::dense(ctx, *x, hidden, "hidden"));
    // The label rows' last entry is each label's bias: how often it is right a priori.
    return head->spec(ctx, est::append_ones(ctx, est::dense(ctx, h, dim - 1, "output")), b);
  }};
}

/// recall@10 of always predicting the 10 most frequent keywords of `train`.
double popular_recall(const est::example_table& train, const est::example_table& test) {
  std::map<std::string, size_t> counts;
  for (auto& row : train.features.at("keywords").strings)
    for (auto& k : row)
      ++counts[k];
  std::vector<std::pair<size_t, std::string>> ranked;
  for (auto& [k, n] : counts)
    ranked.emplace_back(n, k);
  std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::set<std::string> top;
  for (size_t i = 0; i < std::min<size_t>(10, ranked.size()); ++i)
    top.insert(ranked[i].second);
  auto& rows = test.features.at("keywords").strings;
  double total = 0;
  for (auto& row : rows) {
    size_t found = 0;
    for (auto& k : row)
      found += top.count(k);
    total += double(found) / double(row.size());
  }
  return rows.empty() ? 0 : total / double(rows.size());
}

caf::error write_report(const std::string& out, const std::vector<sparse2label_round>& rounds) {
  auto tsv = out + ".tsv", png = out + ".png";
  std::ofstream file{tsv};
  file << "round\tcategory\ttrain_passages\ttest_passages\tglobal_step\tword_rows\tlabel_rows\t"
          "embedding_bytes\tdense_parameters\trecall_at_10\trecall_at_1\tpopular_recall_at_10\t"
          "seconds\n";
  for (auto& r : rounds)
    file << r.round << '\t' << r.category << '\t' << r.train_passages << '\t' << r.test_passages
         << '\t' << r.global_step << '\t' << r.word_rows << '\t' << r.label_rows << '\t'
         << r.embedding_bytes << '\t' << r.dense_parameters << '\t' << r.recall_at_10 << '\t'
         << r.recall_at_1 << '\t' << r.popular_recall_at_10 << '\t' << r.seconds << '\n';
  file.close();
  if (!file)
    return make_error(errc::io_error, "cannot write " + tsv);
  std::ostringstream gp;
  gp << "set terminal pngcairo noenhanced size 900,500\nset output '" << png << "'\n"
     << "set title 'Sparse2Label on Brown: one category added per round'\n"
     << "set xlabel 'round'\nset ylabel 'recall@10 of held-out keywords'\n"
     << "set y2label 'rows in the embedding service'\nset ytics nomirror\nset y2tics\n"
     << "set key top left\nset grid\nset datafile separator '\\t'\n"
     << "plot '" << tsv << "' every ::1 using 1:10 with linespoints lw 2 title 'recall@10', "
     << "'' every ::1 using 1:12 with linespoints dt 2 title 'most popular keywords', "
     << "'' every ::1 using 1:($6+$7) axes x1y2 with linespoints title 'model rows (words + "
        "labels)'\n";
  return apps::draw_with_gnuplot(out + ".gp", gp.str(), png);
}

} // namespace

std::vector<std::string> passage_keywords(const token_list& tokens,
                                          const std::map<std::string, uint32_t>& document_frequency,
                                          size_t passages, size_t limit) {
  std::map<std::string, size_t> counts;
  for (auto& [word, tag] : tokens)
    if (is_keyword_candidate(word, tag))
      ++counts[word];
  std::vector<std::pair<double, std::string>> ranked;
  for (auto& [word, n] : counts) {
    if (n < 2)
      continue;
    auto df = document_frequency.count(word) ? document_frequency.at(word) : 0;
    ranked.emplace_back(double(n) * std::log(double(passages + 1) / double(df + 1)), word);
  }
  std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(limit, ranked.size()); ++i)
    out.push_back(ranked[i].second);
  return out;
}

caf::expected<std::vector<sparse2label_category>> load_sparse2label(const std::string& corpus,
                                                                    uint32_t passage_words,
                                                                    uint32_t keywords) {
  if (passage_words == 0 || keywords == 0)
    return make_error(errc::invalid_config,
                      "sparse2label: passage_words and keywords must be >= 1");
  auto catalog = stores::read_brown_catalog(corpus);
  if (!catalog)
    return std::move(catalog.error());
  struct passage {
    token_list tokens;
    uint32_t category;
    bool test;
  };
  std::vector<passage> passages;
  std::map<std::string, uint32_t> df;
  for (size_t d = 0; d < catalog->documents.size(); ++d) {
    auto& doc = catalog->documents[d];
    auto read = read_passages(doc.path, passage_words);
    if (!read)
      return std::move(read.error());
    for (auto& tokens : *read) {
      std::set<std::string> distinct;
      for (auto& t : tokens)
        distinct.insert(t.first);
      for (auto& w : distinct)
        ++df[w];
      passages.push_back({std::move(tokens), doc.label, d % 10 == 9});
    }
  }
  std::vector<rows_under_construction> train(catalog->categories.size()), test(train.size());
  for (auto& p : passages) {
    auto labels = passage_keywords(p.tokens, df, passages.size(), keywords);
    if (labels.empty())
      continue;
    std::vector<std::string> words;
    for (auto& t : p.tokens)
      if (has_letter(t.first))
        words.push_back(t.first);
    auto& rows = (p.test ? test : train)[p.category];
    rows.words.push_back(std::move(words));
    rows.keywords.push_back(std::move(labels));
  }
  std::vector<sparse2label_category> out;
  for (size_t c = 0; c < train.size(); ++c) {
    if (train[c].words.empty() || test[c].words.empty())
      return make_error(errc::invalid_argument, corpus + ": category " + catalog->categories[c] +
                                                  " has too few passages with keywords");
    out.push_back({catalog->categories[c], train[c].table(), test[c].table()});
  }
  return out;
}

caf::expected<std::vector<sparse2label_round>> run_sparse2label(
  const sparse2label_options& o, const std::vector<sparse2label_category>& data) {
  namespace fs = std::filesystem;
  if (o.model_dir.empty())
    return make_error(errc::invalid_config, "sparse2label: the rounds need a model directory");
  if (o.embedding_dim < 2)
    return make_error(errc::invalid_config, "sparse2label: embedding_dim must be >= 2");
  auto rounds = o.rounds == 0 ? data.size() : size_t{o.rounds};
  if (rounds > data.size() || rounds == 0)
    return make_error(errc::invalid_config, "sparse2label: " + std::to_string(o.rounds) +
                                              " rounds, but the corpus has " +
                                              std::to_string(data.size()) + " categories");
  std::vector<sparse2label_round> report;
  std::vector<const est::example_table*> train_parts, test_parts;
  uint64_t global_step = 0;
  for (size_t r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    train_parts.push_back(data[r].train.get());
    test_parts.push_back(data[r].test.get());
    auto train = concatenate(train_parts);
    auto test = concatenate(test_parts);
    // A fresh session and estimator per round, as a new job of continuous training would be:
    // everything it knows comes from the last round's checkpoint.
    auto session = ops::session::open({.name = "sparse2label", .threads = 1});
    if (!session)
      return std::move(session.error());
    auto fn = sparse2label_model(o, **session);
    if (!fn)
      return std::move(fn.error());
    auto round_dir = [&](size_t i) {
      return (fs::path{o.model_dir} / ("round-" + std::to_string(i + 1))).string();
    };
    est::run_config cfg{.model_dir = round_dir(r),
                        .warm_start_from = r > 0 ? round_dir(r - 1) : std::string{},
                        .seed = o.seed,
                        .threads = o.threads,
                        .optimizer = compute::adam_optimizer(static_cast<float>(o.learning_rate)),
                        .embeddings = session->get()};
    est::estimator e{*fn, cfg};
    auto train_input = [&]() -> caf::expected<std::unique_ptr<est::input_pipeline>> {
      auto d =
        est::make_dataset(train, {.batch_size = o.batch, .epochs = o.epochs, .seed = o.seed + r});
      if (!d)
        return d;
      return est::prefetch(std::move(*d), 4);
    };
    std::vector<est::hook_ptr> hooks;
    hooks.reserve(2);
    hooks.push_back(std::make_shared<est::nan_guard>());
    if (!o.quiet) {
      std::cerr << "sparse2label: round " << r + 1 << "/" << rounds << ", adding " << data[r].name
                << " (" << train->rows() << " passages so far)\n";
      auto steps = (train->rows() + o.batch - 1) / o.batch * o.epochs;
      hooks.push_back(std::make_shared<apps::progress_hook>(global_step + steps));
    }
    auto trained = e.train(train_input, 0, hooks);
    if (!trained)
      return std::move(trained.error());
    global_step = trained->global_step;
    auto metrics =
      e.evaluate([&] { return est::make_dataset(test, {.batch_size = 256, .shuffle = false}); });
    if (!metrics)
      return std::move(metrics.error());
    sparse2label_round row{.round = static_cast<uint32_t>(r + 1),
                           .category = data[r].name,
                           .train_passages = train->rows(),
                           .test_passages = test->rows(),
                           .global_step = global_step};
    for (auto [table, rows] :
         {std::pair{words_table, &row.word_rows}, std::pair{labels_table, &row.label_rows}}) {
      auto stats = ops::stats(**session, table);
      if (!stats)
        return std::move(stats.error());
      *rows = stats->rows;
      row.embedding_bytes += stats->bytes;
    }
    for (auto* p : e.variables().all())
      row.dense_parameters += static_cast<uint64_t>(p->value.size());
    row.recall_at_10 = metrics->at("recall_at_10");
    row.recall_at_1 = metrics->at("recall_at_1");
    row.popular_recall_at_10 = popular_recall(*train, *test);
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.push_back(row);
    if (auto err = write_report(o.out, report))
      return err;
    if (r + 1 == rounds && !o.export_dir.empty()) {
      auto version = est::export_model(e, o.export_dir,
                                       [&] { return est::make_dataset(test, {.batch_size = 1}); });
      if (!version)
        return std::move(version.error());
    }
  }
  return report;
}

} // namespace darcy::estimator_apps
