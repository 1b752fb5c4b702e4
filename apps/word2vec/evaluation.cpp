#include "apps/word2vec/evaluation.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "compute/stats.hpp"
#include "messages/error.hpp"

namespace darcy::word2vec {

namespace {

std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// Unit-length rows of the first `limit` words, and a case-insensitive index into them (the
// more frequent spelling wins).
struct unit_table {
  compute::row_matrix rows;
  std::unordered_map<std::string, Eigen::Index> index;
  Eigen::Index fallback = -1;

  unit_table(const word_vectors& v, size_t limit, const eval_options& opts) {
    auto n = static_cast<Eigen::Index>(std::min(limit, v.words.size()));
    rows = v.vectors.topRows(n);
    compute::normalise_rows(rows);
    for (Eigen::Index r = 0; r < n; ++r)
      index.try_emplace(lower(v.words[static_cast<size_t>(r)]), r);
    if (!opts.fallback.empty())
      if (auto i = index.find(lower(opts.fallback)); i != index.end())
        fallback = i->second;
  }

  /// The row of `word`, the fallback's, or -1.
  Eigen::Index find(const std::string& word) const {
    auto i = index.find(word);
    return i != index.end() ? i->second : fallback;
  }
};

bool in_universe(const eval_options& opts, const std::vector<std::string>& words) {
  if (opts.universe == nullptr)
    return true;
  return std::all_of(words.begin(), words.end(),
                     [&](const std::string& w) { return opts.universe->count(w) > 0; });
}

caf::expected<std::ifstream> open(const std::string& file) {
  std::ifstream in{file};
  if (!in)
    return make_error(errc::not_found, "evaluation file " + file + " does not exist");
  return in;
}

} // namespace

caf::expected<analogy_result> evaluate_analogies(const word_vectors& v, const std::string& file,
                                                 const eval_options& opts) {
  auto in = open(file);
  if (!in)
    return std::move(in.error());
  unit_table table{v, opts.analogy_vocab, opts};
  analogy_result result;
  std::vector<std::array<Eigen::Index, 4>> questions;
  std::string line;
  for (size_t number = 1; std::getline(*in, line); ++number) {
    if (line.empty() || line[0] == ':')
      continue;
    std::istringstream ls{line};
    std::vector<std::string> words;
    for (std::string w; ls >> w;)
      words.push_back(lower(w));
    if (words.size() != 4)
      return make_error(errc::corrupt_file, file + ":" + std::to_string(number) +
                                              ": expected 4 words, found " +
                                              std::to_string(words.size()));
    if (!in_universe(opts, words))
      continue;
    ++result.questions;
    std::array<Eigen::Index, 4> q;
    for (size_t i = 0; i < 4; ++i)
      q[i] = table.find(words[i]);
    if (std::find(q.begin(), q.end(), Eigen::Index{-1}) != q.end())
      continue;
    // A word that fell back to oov can never be the answer.
    if (table.index.count(words[3]) == 0)
      q[3] = -2;
    questions.push_back(q);
  }
  result.seen = questions.size();
  const size_t chunk = 512;
  auto dim = table.rows.cols();
  for (size_t begin = 0; begin < questions.size(); begin += chunk) {
    auto n = std::min(chunk, questions.size() - begin);
    compute::row_matrix query(static_cast<Eigen::Index>(n), dim);
    for (size_t i = 0; i < n; ++i) {
      auto& q = questions[begin + i];
      query.row(static_cast<Eigen::Index>(i)) =
        table.rows.row(q[1]) - table.rows.row(q[0]) + table.rows.row(q[2]);
    }
    compute::row_matrix scores = query * table.rows.transpose();
    for (size_t i = 0; i < n; ++i) {
      auto& q = questions[begin + i];
      auto row = scores.row(static_cast<Eigen::Index>(i));
      Eigen::Index best = -1;
      float best_score = 0;
      for (Eigen::Index c = 0; c < row.size(); ++c) {
        if (c == q[0] || c == q[1] || c == q[2])
          continue;
        if (best < 0 || row(c) > best_score) {
          best = c;
          best_score = row(c);
        }
      }
      if (best == q[3])
        ++result.correct;
    }
  }
  return result;
}

caf::expected<similarity_result> evaluate_similarity(const word_vectors& v, const std::string& file,
                                                     const eval_options& opts) {
  auto in = open(file);
  if (!in)
    return std::move(in.error());
  unit_table table{v, v.words.size(), opts};
  similarity_result result;
  std::vector<double> human, model;
  std::string line;
  for (size_t number = 1; std::getline(*in, line); ++number) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ls{line};
    std::string a, b;
    double score;
    if (!(ls >> a >> b >> score))
      return make_error(errc::corrupt_file, file + ":" + std::to_string(number) +
                                              ": expected 'word<TAB>word<TAB>score'");
    std::vector<std::string> words{lower(a), lower(b)};
    if (!in_universe(opts, words))
      continue;
    ++result.pairs;
    auto ia = table.find(words[0]);
    auto ib = table.find(words[1]);
    if (ia < 0 || ib < 0)
      continue;
    ++result.covered;
    human.push_back(score);
    model.push_back(table.rows.row(ia).dot(table.rows.row(ib)));
  }
  result.spearman = compute::spearman(human, model);
  return result;
}

caf::expected<std::vector<std::pair<std::string, float>>> nearest_words(const word_vectors& v,
                                                                        const std::string& word,
                                                                        uint32_t k) {
  auto at = find_word(v, word);
  if (!at)
    return std::move(at.error());
  compute::row_matrix unit = v.vectors;
  compute::normalise_rows(unit);
  compute::row_matrix query = unit.row(*at);
  auto hits =
    compute::top_k_inner_product(query, unit, {}, std::min<size_t>(k + 1, v.words.size()));
  if (!hits)
    return make_error(hits.error());
  std::vector<std::pair<std::string, float>> result;
  for (auto& h : hits->front())
    if (v.words[h.id] != word && result.size() < k)
      result.emplace_back(v.words[h.id], h.score);
  return result;
}

} // namespace darcy::word2vec
