#include "apps/moe/lm_jobs.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/progress/plot.hpp"
#include "apps/progress/progress_bar.hpp"
#include "messages/error.hpp"

namespace darcy::moe {

namespace {

using clock = std::chrono::steady_clock;

double since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

/// The first `tokens` tokens of `s`.
lm_stream head(const lm_stream& s, size_t tokens) {
  tokens = std::min(tokens, s.words.size());
  return {{s.words.begin(), s.words.begin() + static_cast<long>(tokens)},
          {s.ids.begin(), s.ids.begin() + static_cast<long>(tokens)}};
}

void fill_load(lm_result& r, const lm_eval& e) {
  if (e.expert_load.empty())
    return;
  double sum = 0, sq = 0, used = 0;
  for (auto l : e.expert_load) {
    sum += l;
    sq += double(l) * l;
    used += l > 0;
  }
  double n = e.expert_load.size(), mean = sum / n;
  r.experts_used = used / n;
  r.load_cv = mean > 0 ? std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean : 0;
  if (e.threshold_agreement)
    r.threshold_agreement = *e.threshold_agreement;
}

/// Evaluates `m` on the validation split; when it is the best epoch so far, also on the test
/// split and the head of the training split, and keeps those figures in `r`.
caf::error evaluate_epoch(lm_model& m, const lm_corpus& corpus, uint32_t epoch, lm_result& r) {
  auto valid = m.evaluate(corpus.valid);
  if (!valid)
    return std::move(valid.error());
  r.valid_by_epoch.push_back(valid->perplexity);
  if (r.best_epoch > 0 && valid->perplexity >= r.valid_perplexity)
    return {};
  auto train = m.evaluate(head(corpus.train, corpus.valid.words.size()));
  if (!train)
    return std::move(train.error());
  auto test = m.evaluate(corpus.test);
  if (!test)
    return std::move(test.error());
  r.best_epoch = epoch;
  r.valid_perplexity = valid->perplexity;
  r.train_perplexity = train->perplexity;
  r.test_perplexity = test->perplexity;
  fill_load(r, *test);
  return {};
}

} // namespace

caf::expected<lm_result> train_lm(const lm_job& job, const lm_corpus& corpus,
                                  const std::string& label) {
  auto session = ops::session::open({});
  if (!session)
    return std::move(session.error());
  auto model = lm_model::make(**session, job.model, corpus);
  if (!model)
    return std::move(model.error());
  auto& m = **model;
  auto& o = job.model;
  auto batch = size_t{o.batch}, unroll = size_t{o.unroll};
  auto per_stream = (corpus.train.words.size() - 1) / batch;
  auto steps_per_epoch = per_stream / unroll;
  auto total = uint64_t{o.epochs} * steps_per_epoch;
  if (o.max_steps > 0)
    total = std::min<uint64_t>(total, o.max_steps);
  auto bar = apps::progress_bar::on_stderr();
  auto start = clock::now();
  double smoothed = 0;
  uint64_t step = 0;
  std::vector<std::string> keys(batch * unroll);
  std::vector<uint64_t> labels(batch * unroll);
  lm_result r;
  r.label = label;
  double train_seconds = 0;
  for (uint32_t epoch = 0; epoch < o.epochs && step < total; ++epoch) {
    auto epoch_start = clock::now();
    m.reset_state();
    for (size_t at = 0; at + unroll <= per_stream && step < total; at += unroll, ++step) {
      for (size_t t = 0; t < unroll; ++t)
        for (size_t b = 0; b < batch; ++b) {
          auto p = b * per_stream + at + t;
          keys[t * batch + b] = corpus.train.words[p];
          labels[t * batch + b] = corpus.train.ids[p + 1];
        }
      auto loss = m.train_step(keys, labels, step);
      if (!loss)
        return std::move(loss.error());
      if (o.gpu && r.moe_device.empty() && m.moe_device() != "gpu") {
        r.moe_device = m.moe_device();
        std::cerr << label << ": the MoE layer left the GPU at step " << step << ": "
                  << r.moe_device << std::endl;
      }
      smoothed = step == 0 ? *loss : 0.98 * smoothed + 0.02 * *loss;
      if (!job.quiet && (step % 20 == 0 || step + 1 == total)) {
        auto rate = double(step + 1) * batch * unroll / (train_seconds + since(epoch_start));
        std::ostringstream figures;
        figures << label << "  step " << step + 1 << "/" << total << "  loss " << std::fixed
                << std::setprecision(3) << smoothed << "  " << apps::format_rate(rate)
                << " tokens/s";
        bar.update(double(step + 1) / total, figures.str(),
                   double(total - step - 1) * batch * unroll / rate);
      }
    }
    train_seconds += since(epoch_start);
    if (!job.quiet)
      bar.finish();
    if (auto err = evaluate_epoch(m, corpus, epoch + 1, r))
      return err;
    if (!job.quiet)
      std::cerr << label << "  epoch " << epoch + 1 << "  valid perplexity "
                << r.valid_by_epoch.back() << " (best " << r.valid_perplexity << ", epoch "
                << r.best_epoch << ")" << std::endl;
  }
  r.tokens_per_second = double(step) * batch * unroll / train_seconds;
  r.moe_device = m.moe_device();
  r.parameters = m.parameters();
  r.multiply_adds = m.multiply_adds_per_word();
  r.seconds = since(start);
  return r;
}

namespace {

nlohmann::json to_json(const gating_config& g) {
  return {{"experts", g.experts},
          {"k", g.k},
          {"mask", to_string(g.mask)},
          {"importance_weight", g.importance_weight},
          {"load_weight", g.load_weight}};
}

/// The figures of `r`, and the gates of `model`'s MoE layer (null for the dense row), so that
/// each line says what was trained.
nlohmann::json to_json(const lm_result& r, const lm_options& model) {
  nlohmann::json gating;
  if (model.middle != lm_middle::lstm)
    gating = to_json(model.layer.gating);
  if (model.middle == lm_middle::hierarchical)
    gating["primary"] = to_json(model.primary);
  return {{"model", r.label},
          {"gating", gating},
          {"best_epoch", r.best_epoch},
          {"valid_perplexity_by_epoch", r.valid_by_epoch},
          {"train_perplexity", r.train_perplexity},
          {"valid_perplexity", r.valid_perplexity},
          {"test_perplexity", r.test_perplexity},
          {"parameters", r.parameters},
          {"multiply_adds_per_word", r.multiply_adds},
          {"tokens_per_second", r.tokens_per_second},
          {"seconds", r.seconds},
          {"experts_used", r.experts_used},
          {"expert_load_cv", r.load_cv},
          {"threshold_agreement", r.threshold_agreement},
          {"moe_device", r.moe_device}};
}

caf::expected<lm_corpus> load(const lm_job& job) {
  auto corpus = load_brown_lm(job.corpus, job.min_count);
  if (corpus && !job.quiet)
    std::cerr << "brown: " << corpus->train.words.size() << " / " << corpus->valid.words.size()
              << " / " << corpus->test.words.size() << " tokens (train / valid / test, "
              << corpus->documents[0] << " / " << corpus->documents[1] << " / "
              << corpus->documents[2] << " documents), output vocabulary "
              << corpus->vocabulary.size() << std::endl;
  return corpus;
}

std::string label_of(const lm_options& o) {
  switch (o.middle) {
    case lm_middle::lstm:
      return "dense-lstm";
    case lm_middle::moe:
      return "moe-" + std::to_string(o.layer.gating.experts);
    case lm_middle::hierarchical:
      return "hmoe-" + std::to_string(o.primary.experts) + "x" +
             std::to_string(o.layer.gating.experts);
  }
  return "?";
}

} // namespace

lm_options hierarchical_options(lm_options base, uint32_t groups, uint32_t per_group) {
  base.middle = lm_middle::hierarchical;
  auto balanced = [](gating_config g) {
    g.mask = mask_kind::noisy_top_k;
    g.balance_weight = 0;
    g.importance_weight = 0.1;
    g.load_weight = 0.1;
    return g;
  };
  base.primary = balanced(base.layer.gating);
  base.primary.experts = groups;
  base.primary.k = 1;
  base.primary.seed = base.layer.gating.seed + 1;
  base.layer.gating = balanced(base.layer.gating);
  base.layer.gating.experts = per_group;
  return base;
}

caf::error run_lm(const lm_job& job) {
  if (auto err = validate(job.model))
    return err;
  auto corpus = load(job);
  if (!corpus)
    return std::move(corpus.error());
  auto r = train_lm(job, *corpus, label_of(job.model));
  if (!r)
    return std::move(r.error());
  std::cout << to_json(*r, job.model).dump() << std::endl;
  return {};
}

std::vector<lm_job> experiment_rows(const experiment_job& job) {
  std::vector<lm_job> rows;
  auto dense = job.base;
  dense.model.middle = lm_middle::lstm;
  rows.push_back(dense);
  for (auto n : job.experts) {
    auto row = job.base;
    row.model.middle = lm_middle::moe;
    auto& gating = row.model.layer.gating;
    gating.experts = n;
    if (n > 0)
      gating.k = std::min(gating.k, n);
    rows.push_back(row);
  }
  if (job.groups > 0) {
    auto row = job.base;
    row.model = hierarchical_options(job.base.model, job.groups, job.group_experts);
    rows.push_back(row);
  }
  return rows;
}

caf::error run_experiment(const experiment_job& job) {
  namespace fs = std::filesystem;
  auto rows = experiment_rows(job);
  for (auto& row : rows)
    if (auto err = validate(row.model))
      return err;
  std::error_code ec;
  fs::create_directories(job.out_dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + job.out_dir + ": " + ec.message());
  auto corpus = load(job.base);
  if (!corpus)
    return std::move(corpus.error());
  auto table_path = (fs::path{job.out_dir} / "moe-experts.tsv").string();
  std::ofstream table{table_path};
  table << "model\ttest_perplexity\tvalid_perplexity\ttrain_perplexity\tparameters\t"
           "multiply_adds_per_word\texperts_used\texpert_load_cv\tthreshold_agreement\t"
           "tokens_per_second\tseconds\tbest_epoch\n";
  for (auto& row : rows) {
    auto r = train_lm(row, *corpus, label_of(row.model));
    if (!r)
      return std::move(r.error());
    std::cout << to_json(*r, row.model).dump() << std::endl;
    table << r->label << '\t' << r->test_perplexity << '\t' << r->valid_perplexity << '\t'
          << r->train_perplexity << '\t' << r->parameters << '\t' << r->multiply_adds << '\t'
          << r->experts_used << '\t' << r->load_cv << '\t' << r->threshold_agreement << '\t'
          << r->tokens_per_second << '\t' << r->seconds << '\t' << r->best_epoch << std::endl;
  }
  table.close();
  auto png = (fs::path{job.out_dir} / "moe-experts.png").string();
  auto script = (fs::path{job.out_dir} / "moe-experts.gp").string();
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1000,560\n"
     << "set output '" << png << "'\n"
     << "set title 'MoE language model on Brown: test perplexity at matched multiply-adds per "
        "word'\n"
     << "set datafile separator '\\t'\nset style data histograms\nset style fill solid 0.6\n"
     << "set boxwidth 0.7\nset yrange [0:*]\nset ylabel 'perplexity'\nset y2label 'parameters "
        "(millions, excl. "
        "embeddings and softmax)'\nset y2tics\nset ytics nomirror\nset grid ytics\n"
     << "set key top left\nset xtics rotate by -20\n"
     << "plot '" << table_path << "' every ::1 using 2:xtic(1) title 'test perplexity',"
     << " '' every ::1 using 3 title 'validation perplexity',"
     << " '' every ::1 using 0:($5/1e6) axes x1y2 with linespoints lw 2 pt 7 title 'parameters'\n";
  if (auto err = apps::draw_with_gnuplot(script, gp.str(), png))
    return err;
  std::cout << "table: " << table_path << "\nplot: " << png << std::endl;
  return {};
}

} // namespace darcy::moe
