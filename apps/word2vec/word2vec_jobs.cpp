#include "apps/word2vec/word2vec_jobs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <unordered_set>

#include <unistd.h>

#include "apps/progress/plot.hpp"
#include "apps/progress/progress_bar.hpp"
#include "apps/word2vec/evaluation.hpp"
#include "apps/word2vec/run_fingerprint.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/host_port.hpp"
#include "runtime/process/machine.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::word2vec {

namespace {

using clock = std::chrono::steady_clock;

caf::expected<std::unique_ptr<ops::session>> open_session(const session_choice& where) {
  if (auto err =
        runtime::check_at_most("--shards", where.shards, 1024, "shards per process or node"))
    return err;
  ops::session_options opts;
  opts.name = "word2vec";
  opts.shards = where.shards;
  opts.timeout = std::chrono::milliseconds{where.timeout_ms};
  opts.supervise_shards = where.supervise;
  opts.shard_retry = std::chrono::milliseconds{where.shard_retry_ms};
  opts.shard_checkpoint_dir = where.shard_checkpoint_dir;
  if (!where.cluster.empty()) {
    auto address = runtime::resolve_seed(where.cluster);
    if (!address)
      return make_error(errc::invalid_argument, "--cluster: " + render(address.error()));
    opts.seed = *address;
  }
  auto s = ops::session::open(opts);
  if (!s && !where.cluster.empty())
    return make_error(errc::node_unreachable,
                      "the cluster at " + where.cluster + " does not answer: " + render(s.error()));
  return s;
}

std::string fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}

struct scores {
  analogy_result analogy;
  std::vector<similarity_result> similarity;
};

caf::expected<scores> evaluate(const word_vectors& v, const std::string& analogies,
                               const std::vector<std::string>& similarity,
                               const eval_options& opts) {
  scores result;
  if (!analogies.empty()) {
    auto a = evaluate_analogies(v, analogies, opts);
    if (!a)
      return std::move(a.error());
    result.analogy = *a;
  }
  for (auto& file : similarity) {
    auto r = evaluate_similarity(v, file, opts);
    if (!r)
      return std::move(r.error());
    result.similarity.push_back(*r);
  }
  return result;
}

void print_scores(const scores& s, const std::string& analogies,
                  const std::vector<std::string>& similarity) {
  if (!analogies.empty())
    std::cout << "analogies " << std::filesystem::path{analogies}.filename().string()
              << ": accuracy " << fixed(100 * s.analogy.accuracy(), 2) << "% (" << s.analogy.correct
              << " of " << s.analogy.seen << " seen; " << s.analogy.questions << " questions)"
              << std::endl;
  for (size_t i = 0; i < similarity.size(); ++i) {
    auto& r = s.similarity[i];
    std::cout << "similarity " << std::filesystem::path{similarity[i]}.filename().string()
              << ": spearman " << fixed(r.spearman, 4) << " (coverage " << r.covered << "/"
              << r.pairs << ")" << std::endl;
  }
}

} // namespace

void default_eval_files(const std::string& dir, std::string& analogies,
                        std::vector<std::string>& similarity) {
  namespace fs = std::filesystem;
  if (dir.empty() || !fs::is_directory(dir))
    return;
  if (fs::exists(fs::path{dir} / "questions-words.txt"))
    analogies = (fs::path{dir} / "questions-words.txt").string();
  for (auto name : {"wordsim353.tsv", "simlex999.txt"})
    if (fs::exists(fs::path{dir} / name))
      similarity.push_back((fs::path{dir} / name).string());
}

namespace {

// Neighbours of a trained word through the service's cosine top_k; `vectors` gives the query.
caf::expected<std::vector<std::pair<std::string, float>>> neighbours_in_service(
  ops::session& s, const de_config& table, const word_vectors& vectors, const std::string& word,
  uint32_t k) {
  auto at = find_word(vectors, word);
  if (!at)
    return std::move(at.error());
  auto row = vectors.vectors.row(*at);
  return neighbours(s, table, {row.data(), static_cast<size_t>(row.size())}, word, k);
}

caf::expected<uint64_t> row_count(ops::session& s, const std::string& name) {
  auto stats = ops::stats(s, name);
  if (!stats)
    return std::move(stats.error());
  return stats->rows;
}

// The stored row of `word`, or errc::not_found. A lookup creates an unknown key's row, so a
// row count that grew tells an unknown word; the created row is the word itself, which
// neighbours() leaves out.
caf::expected<std::vector<float>> stored_row(ops::session& s, const de_config& table,
                                             const std::string& word) {
  auto before = row_count(s, table.name);
  if (!before)
    return std::move(before.error());
  auto rows = ops::dynamic_embedding_lookup(s, {word}, table, table.name, false);
  if (!rows)
    return std::move(rows.error());
  auto after = row_count(s, table.name);
  if (!after)
    return std::move(after.error());
  if (*after != *before)
    return word_not_in_model(word);
  return std::vector<float>(rows->rows.data(), rows->rows.data() + rows->rows.size());
}

struct trained {
  corpus text;
  word_vectors vectors;
  train_report report;
  double wall_seconds = 0;
};

// Reads the corpus, trains, exports the vectors; prints progress unless quiet.
caf::expected<trained> train_corpus(ops::session& s, const train_job& job) {
  auto begin = clock::now();
  auto format = parse_format(job.format);
  if (!format)
    return std::move(format.error());
  auto text = read_corpus(job.corpus, *format);
  if (!text)
    return std::move(text.error());
  if (!job.quiet)
    std::cerr << "corpus: " << text->tokens.size() << " words, " << text->words.size()
              << " distinct, " << text->sentences() << " sentences" << std::endl;
  auto bar = apps::progress_bar::on_stderr();
  auto report = train(s, *text, job.options, [&](const progress& p) {
    if (job.quiet)
      return;
    auto rate = static_cast<double>(p.words_done) / std::max(p.seconds, 1e-9);
    auto left = static_cast<double>(p.words_total - std::min(p.words_total, p.words_done));
    bar.update(static_cast<double>(p.batches_done) / static_cast<double>(p.batches_total),
               apps::format_rate(rate) + " words/s  alpha " + fixed(p.alpha, 5),
               left / std::max(rate, 1.0));
  });
  bar.finish();
  if (!report)
    return std::move(report.error());
  auto vectors = export_vectors(s, *text, job.options);
  if (!vectors)
    return std::move(vectors.error());
  std::chrono::duration<double> wall = clock::now() - begin;
  return trained{std::move(*text), std::move(*vectors), *report, wall.count()};
}

} // namespace

caf::error run_train(const train_job& given) {
  auto job = given;
  bool on_cluster = !job.where.cluster.empty();
  auto every = job.checkpoint_every >= 0 ? static_cast<uint64_t>(job.checkpoint_every)
                                         : (on_cluster ? default_checkpoint_every : 0);
  bool temporary_dir = false;
  if (every > 0) {
    if (job.periodic_checkpoint.empty()) {
      job.periodic_checkpoint =
        (std::filesystem::temp_directory_path() / ("darcy-word2vec-" + std::to_string(::getpid())))
          .string();
      temporary_dir = true;
    }
    job.options.checkpoint_every = every;
    job.options.periodic_dir = job.periodic_checkpoint;
    if (on_cluster) {
      job.where.supervise = true;
      job.where.shard_checkpoint_dir = job.periodic_checkpoint;
    }
  }
  // Refuse a place the run could not write before training, not after.
  auto output_dir = std::filesystem::path{job.output}.parent_path().string();
  for (auto [flag, dir] : {std::pair{"--checkpoint", job.checkpoint},
                           {"--stop-checkpoint", job.options.checkpoint_to},
                           {"--periodic-checkpoint", job.options.periodic_dir},
                           {"--output", job.output.empty()   ? std::string{}
                                        : output_dir.empty() ? std::string{"."}
                                                             : output_dir}})
    if (!dir.empty())
      if (auto err = stores::checkpoint_dir{dir}.prepare())
        return make_error(errc::io_error, std::string{flag} + ": " + context_of(err));
  auto session = open_session(job.where);
  if (!session)
    return std::move(session.error());
  auto& s = **session;
  auto result = train_corpus(s, job);
  if (!result)
    return std::move(result.error());
  auto& r = *result;
  auto words = static_cast<double>(r.report.last.words_done);
  std::cout << "trained " << r.report.last.words_done << " words in "
            << fixed(r.report.last.seconds, 2) << " s ("
            << apps::format_rate(words / std::max(r.report.last.seconds, 1e-9))
            << " words/s training, " << fixed(r.wall_seconds, 2) << " s wall with reading), "
            << r.vectors.words.size() << " word vectors" << std::endl;
  if (r.report.checkpoints > 0)
    std::cout << "periodic checkpoints: " << r.report.checkpoints << " (every " << every
              << " batches); recovered from " << r.report.lost_shards << " lost shard(s) with "
              << r.report.recoveries << " restore(s), replaying " << r.report.replayed_batches
              << " batches" << std::endl;
  if (r.report.retried_requests > 0)
    std::cout << "shard requests sent again after a timeout: " << r.report.retried_requests
              << std::endl;
  if (job.options.sampler == word2vec::negative_source::service)
    std::cout << "negatives from the service's sampler in " << r.report.service_sampled_batches
              << " batches, drawn here in " << r.report.local_sampled_batches
              << " (the service held no row yet)" << std::endl;
  if (temporary_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(job.periodic_checkpoint, ignored);
  }
  if (r.report.stopped_early)
    std::cout << "stopped after " << r.report.last.batches_done << " of "
              << r.report.last.batches_total << " batches; checkpoint in "
              << job.options.checkpoint_to << std::endl;
  if (!job.output.empty()) {
    if (auto err = write_vectors(r.vectors, job.output,
                                 job.binary ? vectors_format::binary : vectors_format::text))
      return err;
    std::cout << "vectors: " << job.output << std::endl;
  }
  for (auto& word : job.show_neighbours) {
    auto near = neighbours_in_service(s, input_table_config(job.options), r.vectors, word, 8);
    std::cout << "neighbours of '" << word << "':";
    if (!near) {
      std::cout << " (" << render(near.error()) << ")" << std::endl;
      continue;
    }
    for (auto& [w, score] : *near)
      std::cout << ' ' << w << " (" << fixed(score, 3) << ")";
    std::cout << std::endl;
  }
  if (!job.analogies.empty() || !job.similarity.empty()) {
    auto s2 = evaluate(r.vectors, job.analogies, job.similarity, {});
    if (!s2)
      return std::move(s2.error());
    print_scores(*s2, job.analogies, job.similarity);
  }
  if (!job.checkpoint.empty()) {
    auto total = r.report.last.batches_total;
    ops::training_state state{
      static_cast<int64_t>(total), encode_position(total, r.text, job.options), {}};
    if (auto err = ops::save(s, job.checkpoint, state))
      return make_error(errc::io_error,
                        "the trained model could not be saved to " + job.checkpoint + " (" +
                          render(err) + ")" +
                          (job.output.empty() ? "; no vectors were written: add --output FILE"
                                              : "; its vectors are in " + job.output));
    std::cout << "checkpoint: " << job.checkpoint << std::endl;
  }
  return {};
}

caf::error write_plain_corpus(const std::string& path, const std::string& format,
                              const std::string& out) {
  auto f = parse_format(format);
  if (!f)
    return std::move(f.error());
  auto text = read_corpus(path, *f);
  if (!text)
    return std::move(text.error());
  std::ofstream file{out, std::ios::binary};
  for (size_t i = 0; i < text->sentences(); ++i) {
    for (auto t = text->sentence_begin(i); t < text->sentence_ends[i]; ++t)
      file << (t == text->sentence_begin(i) ? "" : " ") << text->tokens[t].word;
    file << '\n';
  }
  file.close();
  if (!file)
    return make_error(errc::io_error, "cannot write " + out);
  std::cout << text->tokens.size() << " words, " << text->sentences() << " sentences: " << out
            << std::endl;
  return {};
}

caf::error run_eval(const eval_job& job) {
  if (job.analogies.empty() && job.similarity.empty())
    return make_error(errc::invalid_argument, "give --analogies and/or --similarity files");
  auto v = read_vectors(job.vectors);
  if (!v)
    return std::move(v.error());
  eval_options opts;
  opts.analogy_vocab = job.analogy_vocab;
  auto s = evaluate(*v, job.analogies, job.similarity, opts);
  if (!s)
    return std::move(s.error());
  print_scores(*s, job.analogies, job.similarity);
  if (job.json) {
    std::cout << "{\"analogy_accuracy\":" << s->analogy.accuracy()
              << ",\"analogy_seen\":" << s->analogy.seen;
    for (size_t i = 0; i < job.similarity.size(); ++i) {
      auto rho = s->similarity[i].spearman;
      std::cout << ",\"" << std::filesystem::path{job.similarity[i]}.stem().string()
                << "\":" << (std::isnan(rho) ? std::string{"null"} : fixed(rho, 6));
    }
    std::cout << "}" << std::endl;
  }
  return {};
}

caf::error run_neighbours(const neighbours_job& job) {
  if (job.checkpoint.empty() == job.vectors.empty())
    return make_error(errc::invalid_argument, "give exactly one of --checkpoint and --vectors");
  caf::expected<std::vector<std::pair<std::string, float>>> near{caf::error{}};
  if (!job.vectors.empty()) {
    auto v = read_vectors(job.vectors);
    if (!v)
      return std::move(v.error());
    near = nearest_words(*v, job.word, job.k);
  } else {
    auto session = open_session({});
    if (!session)
      return std::move(session.error());
    auto& s = **session;
    auto restored = ops::restore(s, job.checkpoint);
    if (!restored)
      return std::move(restored.error());
    auto table = std::find_if(restored->embeddings.begin(), restored->embeddings.end(),
                              [&](const de_config& cfg) { return cfg.name == job.name + ".in"; });
    if (table == restored->embeddings.end())
      return make_error(errc::not_found, "the checkpoint has no embedding " + job.name + ".in");
    auto query = stored_row(s, *table, job.word);
    if (!query)
      return std::move(query.error());
    near = neighbours(s, *table, *query, job.word, job.k);
  }
  if (!near)
    return std::move(near.error());
  for (auto& [w, score] : *near)
    std::cout << std::left << std::setw(20) << w << ' ' << fixed(score, 4) << std::endl;
  return {};
}

caf::error run_vocab_cap(const vocab_cap_job& job) {
  namespace fs = std::filesystem;
  if (job.train.analogies.empty() && job.train.similarity.empty())
    return make_error(
      errc::invalid_argument,
      "the experiment needs evaluation files (--eval-dir or --analogies/--similarity)");
  std::error_code ec;
  fs::create_directories(job.out_dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + job.out_dir + ": " + ec.message());
  // Unlimited first: its vocabulary fixes the evaluation items every cap is scored on.
  std::vector<size_t> caps = job.caps;
  std::stable_sort(caps.begin(), caps.end(), [](size_t a, size_t b) { return a == 0 && b != 0; });
  std::unordered_set<std::string> universe;
  auto table_path = (fs::path{job.out_dir} / "vocab-cap.tsv").string();
  // Rows by the x value the plot uses (the unlimited run at its vocabulary size).
  std::map<size_t, std::string> rows;
  std::cout << std::left << std::setw(10) << "cap" << std::setw(10) << "rows" << std::setw(12)
            << "analogy%" << std::setw(12) << "wordsim" << std::setw(12) << "simlex"
            << "seconds" << std::endl;
  for (auto cap : caps) {
    auto t = job.train;
    t.options.vocab_cap = cap;
    t.quiet = true;
    auto session = open_session(t.where);
    if (!session)
      return std::move(session.error());
    auto r = train_corpus(**session, t);
    if (!r)
      return std::move(r.error());
    if (cap == 0) {
      auto limit = std::min<size_t>(30000, r->vectors.words.size());
      universe.insert(r->vectors.words.begin(),
                      r->vectors.words.begin() + static_cast<long>(limit));
    }
    eval_options opts;
    opts.fallback = oov_key;
    opts.universe = &universe;
    auto s = evaluate(r->vectors, t.analogies, t.similarity, opts);
    if (!s)
      return std::move(s.error());
    auto rho = [&](size_t i) { return i < s->similarity.size() ? s->similarity[i].spearman : NAN; };
    auto label = cap == 0 ? std::string{"unlimited"} : std::to_string(cap);
    std::cout << std::setw(10) << label << std::setw(10) << r->vectors.words.size() << std::setw(12)
              << fixed(100 * s->analogy.accuracy(), 2) << std::setw(12) << fixed(rho(0), 4)
              << std::setw(12) << fixed(rho(1), 4) << fixed(r->wall_seconds, 1) << std::endl;
    auto x = cap == 0 ? r->text.words.size() : cap;
    std::ostringstream row;
    row << x << '\t' << r->vectors.words.size() << '\t' << s->analogy.accuracy() << '\t' << rho(0)
        << '\t' << rho(1) << '\t' << r->wall_seconds << '\n';
    rows[x] = row.str();
  }
  std::ofstream table{table_path};
  table << "cap\tvocab\tanalogy\twordsim\tsimlex\tseconds\n";
  for (auto& [x, row] : rows)
    table << row;
  table.close();
  auto png = (fs::path{job.out_dir} / "vocab-cap.png").string();
  auto script = (fs::path{job.out_dir} / "vocab-cap.gp").string();
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,560\n"
     << "set output '" << png << "'\n"
     << "set title 'DE-Word2Vec: quality versus vocabulary cap (other words map to oov)'\n"
     << "set logscale x\nset xlabel 'vocabulary cap (words; rightmost: unlimited)'\n"
     << "set ylabel 'Spearman rho'\nset y2label 'analogy accuracy'\n"
     << "set ytics nomirror\nset y2tics\nset key bottom right\nset grid\n"
     << "set datafile separator '\\t'\n"
     << "plot '" << table_path << "' every ::1 using 1:4 with linespoints lw 2 title 'WordSim-353',"
     << " '' every ::1 using 1:5 with linespoints lw 2 title 'SimLex-999',"
     << " '' every ::1 using 1:3 axes x1y2 with linespoints lw 2 title 'analogy accuracy'\n";
  if (auto err = apps::draw_with_gnuplot(script, gp.str(), png))
    return err;
  std::cout << "table: " << table_path << "\nplot: " << png << std::endl;
  return {};
}

} // namespace darcy::word2vec
