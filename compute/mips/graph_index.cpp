#include "compute/mips/graph_index.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>

#include "compute/mips/exact_index.hpp"
#include "compute/mips/int8_dot.hpp"
#include "compute/parallel.hpp"

namespace darcy::compute::mips {

namespace {

using scored = std::pair<float, uint32_t>;

/// Best first: higher score, then lower node number.
bool better(const scored& a, const scored& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

float dot(const float* a, const float* b, Eigen::Index d) {
  return Eigen::Map<const Eigen::VectorXf>(a, d).dot(Eigen::Map<const Eigen::VectorXf>(b, d));
}

/// Prefetches the cache lines of `bytes` bytes at `p`.
void prefetch_lines(const void* p, size_t bytes) {
  auto at = static_cast<const char*>(p);
  for (size_t line = 0; line < bytes; line += 64)
    __builtin_prefetch(at + line);
}

} // namespace

/// Per-thread search state: visit marks by epoch, and the two heaps of a beam.
struct graph_index::scratch {
  std::vector<uint16_t> visited;
  uint16_t epoch = 0;
  /// Max-heap by score: the frontier.
  std::vector<scored> candidates;
  /// Min-heap by score: the best nodes found, the worst on top.
  std::vector<scored> results;
  /// A copy of one node's links, taken under its lock while the graph is built.
  std::vector<uint32_t> copied;
  /// The query times the codes' scales.
  std::vector<float> scaled;
  /// The neighbours of the node being expanded that no step visited before.
  std::vector<uint32_t> fresh;

  void start(size_t nodes) {
    if (visited.size() != nodes) {
      visited.assign(nodes, 0);
      epoch = 0;
    }
    if (++epoch == 0) {
      std::fill(visited.begin(), visited.end(), uint16_t{0});
      epoch = 1;
    }
    candidates.clear();
    results.clear();
  }
  bool visit(uint32_t node) {
    if (visited[node] == epoch)
      return false;
    visited[node] = epoch;
    return true;
  }
};

/// Exact scores: the inner product with the query, plus query_aug times the augmented
/// coordinate.
struct graph_index::exact_scorer {
  const graph_index& g;
  const float* query;
  float query_aug;

  float operator()(uint32_t node) const { return g.score(query, query_aug, node); }
  void prefetch(uint32_t node) const {
    prefetch_lines(g.items_.row(node).data(), g.dim() * sizeof(float));
  }
};

/// Scores through the int8 codes: `scaled` is the query times the codes' scales.
struct graph_index::code_scorer {
  const graph_index& g;
  const float* scaled;

  float operator()(uint32_t node) const {
    auto d = g.code_dims_;
    float sc = dot_codes(scaled, g.codes_.data() + size_t{node} * d, d);
    return g.exact_last_.empty() ? sc : sc + scaled[d] * g.exact_last_[node];
  }
  void prefetch(uint32_t node) const {
    prefetch_lines(g.codes_.data() + size_t{node} * g.code_dims_, g.code_dims_);
  }
};

/// What adding nodes needs beside the graph: a spin lock per node, guarding its links, and the
/// lock of the entry point and top level.
struct graph_index::builder {
  graph_index& g;
  const graph_index_options& o;
  std::unique_ptr<std::atomic_flag[]> locks;
  std::mutex top_mutex;

  builder(graph_index& index, const graph_index_options& options)
    : g(index), o(options), locks(new std::atomic_flag[index.size()]) {
    for (size_t i = 0; i < g.size(); ++i)
      locks[i].clear();
  }

  // Item `node` as the query that ranks the others by their distance to it: the item itself,
  // or for L2 items [x, 1].
  const float* as_query(uint32_t node, std::vector<float>& buffer) const {
    const float* x = g.items_.row(node).data();
    if (!o.l2_items)
      return x;
    buffer.assign(x, x + g.items_.cols());
    buffer.back() = 1.0f;
    return buffer.data();
  }

  void lock(uint32_t node) {
    while (locks[node].test_and_set(std::memory_order_acquire)) {
    }
  }
  void unlock(uint32_t node) { locks[node].clear(std::memory_order_release); }

  // A copy of node's links on `level`, taken under its lock.
  const std::vector<uint32_t>& copy_links(uint32_t node, size_t level, scratch& s) {
    lock(node);
    auto l = g.links(node, level);
    s.copied.assign(l + 1, l + 1 + l[0]);
    unlock(node);
    return s.copied;
  }

  uint32_t descend(const float* q, float qa, uint32_t cur, size_t from, size_t to, scratch& s) {
    float best = g.score(q, qa, cur);
    for (size_t level = from; level > to; --level)
      for (bool moved = true; moved;) {
        moved = false;
        for (auto n : copy_links(cur, level, s))
          if (float sc = g.score(q, qa, n); sc > best) {
            best = sc;
            cur = n;
            moved = true;
          }
      }
    return cur;
  }

  // HNSW's neighbour heuristic: candidates (scored from `base`) best first, each kept only when
  // it is closer to the base than to every one kept before it, up to `cap`. Both distances are
  // taken from the candidate's side: for L2 items a score is a distance less a constant of the
  // side it is taken from.
  std::vector<uint32_t> select(uint32_t base, std::vector<scored>& candidates, size_t cap) {
    std::sort(candidates.begin(), candidates.end(), better);
    std::vector<uint32_t> kept;
    std::vector<float> buffer;
    for (auto& [from_base, c] : candidates) {
      if (kept.size() >= cap)
        break;
      const float* x = as_query(c, buffer);
      float to_base = o.l2_items ? g.score(x, 0.0f, base) : from_base;
      bool diverse = std::none_of(kept.begin(), kept.end(),
                                  [&](uint32_t r) { return g.score(x, g.aug_[c], r) > to_base; });
      if (diverse)
        kept.push_back(c);
    }
    return kept;
  }

  // Adds `node` to `other`'s links on `level`, re-selecting them when they are full.
  void link_back(uint32_t other, uint32_t node, size_t level) {
    lock(other);
    auto l = g.links(other, level);
    auto cap = g.capacity(level);
    if (l[0] < cap) {
      l[1 + l[0]] = node;
      ++l[0];
    } else {
      std::vector<float> buffer;
      const float* x = as_query(other, buffer);
      std::vector<scored> all;
      for (uint32_t j = 1; j <= l[0]; ++j)
        all.emplace_back(g.score(x, g.aug_[other], l[j]), l[j]);
      all.emplace_back(g.score(x, g.aug_[other], node), node);
      auto kept = select(other, all, cap);
      l[0] = static_cast<uint32_t>(kept.size());
      std::copy(kept.begin(), kept.end(), l + 1);
    }
    unlock(other);
  }

  void add(uint32_t node, scratch& s) {
    size_t level = g.levels_[node];
    std::unique_lock<std::mutex> top{top_mutex};
    auto entry = g.entry_;
    auto top_level = g.top_level_;
    // A node that raises the top level holds the lock until it is the entry point.
    if (level <= top_level)
      top.unlock();
    std::vector<float> buffer;
    const float* x = as_query(node, buffer);
    float xa = g.aug_[node];
    auto cur = descend(x, xa, entry, top_level, level, s);
    for (size_t lev = std::min(level, top_level) + 1; lev-- > 0;) {
      g.beam(exact_scorer{g, x, xa}, cur, o.ef_construction, lev, s, this);
      std::vector<scored> found = s.results;
      auto best = *std::min_element(found.begin(), found.end(), better);
      auto chosen = select(node, found, o.m);
      lock(node);
      auto l = g.links(node, lev);
      l[0] = static_cast<uint32_t>(chosen.size());
      std::copy(chosen.begin(), chosen.end(), l + 1);
      unlock(node);
      for (auto other : chosen)
        link_back(other, node, lev);
      cur = best.second;
    }
    if (level > top_level) {
      g.entry_ = node;
      g.top_level_ = level;
    }
  }
};

const uint32_t* graph_index::links(uint32_t node, size_t level) const {
  if (level == 0)
    return bottom_.data() + size_t{node} * (1 + 2 * m_);
  return upper_[node].data() + (level - 1) * (1 + m_);
}

uint32_t* graph_index::links(uint32_t node, size_t level) {
  return const_cast<uint32_t*>(std::as_const(*this).links(node, level));
}

float graph_index::score(const float* query, float query_aug, uint32_t node) const {
  return dot(query, items_.row(node).data(), items_.cols()) + query_aug * aug_[node];
}

uint32_t graph_index::descend(const float* query, float query_aug, uint32_t cur,
                              size_t level) const {
  float best = score(query, query_aug, cur);
  for (size_t lev = top_level_; lev > level; --lev)
    for (bool moved = true; moved;) {
      moved = false;
      auto l = links(cur, lev);
      for (uint32_t j = 1; j <= l[0]; ++j)
        if (float sc = score(query, query_aug, l[j]); sc > best) {
          best = sc;
          cur = l[j];
          moved = true;
        }
    }
  return cur;
}

template <class Scorer>
void graph_index::beam(const Scorer& score_of, uint32_t entry, size_t ef, size_t level, scratch& s,
                       builder* building) const {
  s.start(size());
  auto worst_first = [](const scored& a, const scored& b) { return a.first > b.first; };
  auto best_first = [](const scored& a, const scored& b) { return a.first < b.first; };
  s.visit(entry);
  float e = score_of(entry);
  s.candidates.emplace_back(e, entry);
  s.results.emplace_back(e, entry);
  while (!s.candidates.empty()) {
    std::pop_heap(s.candidates.begin(), s.candidates.end(), best_first);
    auto c = s.candidates.back();
    s.candidates.pop_back();
    if (s.results.size() >= ef && c.first < s.results.front().first)
      break;
    const uint32_t* l;
    uint32_t count;
    if (building != nullptr) {
      auto& copied = building->copy_links(c.second, level, s);
      l = copied.data();
      count = static_cast<uint32_t>(copied.size());
    } else {
      l = links(c.second, level) + 1;
      count = l[-1];
    }
    // The unvisited neighbours first, so that only their rows are fetched, all at once.
    s.fresh.clear();
    for (uint32_t j = 0; j < count; ++j)
      if (s.visit(l[j])) {
        s.fresh.push_back(l[j]);
        score_of.prefetch(l[j]);
      }
    for (auto n : s.fresh) {
      float sc = score_of(n);
      if (s.results.size() < ef || sc > s.results.front().first) {
        // A candidate is likely to be expanded: its links are fetched meanwhile.
        prefetch_lines(links(n, level), (1 + capacity(level)) * sizeof(uint32_t));
        s.candidates.emplace_back(sc, n);
        std::push_heap(s.candidates.begin(), s.candidates.end(), best_first);
        s.results.emplace_back(sc, n);
        std::push_heap(s.results.begin(), s.results.end(), worst_first);
        if (s.results.size() > ef) {
          std::pop_heap(s.results.begin(), s.results.end(), worst_first);
          s.results.pop_back();
        }
      }
    }
  }
}

plain_expected<graph_index> graph_index::build(const row_matrix& items, std::vector<uint64_t> ids,
                                               const graph_index_options& o) {
  if (auto err = check_items(items, ids))
    return err;
  if (items.rows() == 0)
    return plain_error{errc::invalid_argument, "a graph index needs at least one item"};
  if (o.m < 2)
    return plain_error{errc::invalid_argument, "graph_index_options::m must be at least 2"};
  auto n = static_cast<size_t>(items.rows());
  graph_index g;
  g.items_ = items;
  g.ids_ = ids_or_rows(std::move(ids), n);
  g.m_ = o.m;
  g.aug_.assign(n, 0.0f);
  if (o.augmented && !o.l2_items) {
    Eigen::VectorXf norms2 = items.rowwise().squaredNorm();
    float longest = norms2.maxCoeff();
    for (size_t i = 0; i < n; ++i)
      g.aug_[i] = std::sqrt(std::max(0.0f, longest - norms2(static_cast<Eigen::Index>(i))));
  }
  // Layer counts: floor(-ln(U) / ln(m)), HNSW's geometric law.
  std::mt19937_64 rng{o.seed};
  std::uniform_real_distribution<double> uniform{std::nextafter(0.0, 1.0), 1.0};
  auto scale = 1.0 / std::log(static_cast<double>(o.m));
  g.levels_.resize(n);
  g.upper_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto level = std::min(32.0, std::floor(-std::log(uniform(rng)) * scale));
    g.levels_[i] = static_cast<uint8_t>(level);
    g.upper_[i].assign(g.levels_[i] * (1 + o.m), 0);
  }
  g.bottom_.assign(n * (1 + 2 * o.m), 0);
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), uint32_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  g.entry_ = order[0];
  g.top_level_ = g.levels_[order[0]];
  graph_index_options opts = o;
  opts.ef_construction = std::max(o.ef_construction, o.m);
  builder b{g, opts};
  std::atomic<size_t> next{1};
  parallel_ranges(o.threads, o.threads, [&](size_t, size_t, size_t) {
    scratch s;
    for (size_t i; (i = next.fetch_add(1)) < n;)
      b.add(order[i], s);
  });
  if (o.int8_codes) {
    auto cd = g.code_dims_ = o.l2_items ? g.dim() - 1 : g.dim();
    if (o.l2_items) {
      Eigen::VectorXf last = items.col(items.cols() - 1);
      g.exact_last_.assign(last.data(), last.data() + n);
    }
    Eigen::RowVectorXf largest =
      items.leftCols(static_cast<Eigen::Index>(cd)).cwiseAbs().colwise().maxCoeff();
    g.code_scales_.resize(cd);
    for (size_t d = 0; d < cd; ++d) {
      auto top = largest(static_cast<Eigen::Index>(d));
      g.code_scales_[d] = top > 0 ? top / 127.0f : 1.0f;
    }
    g.codes_.resize(n * cd);
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < cd; ++d)
        g.codes_[i * cd + d] = static_cast<int8_t>(std::lround(
          items(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(d)) / g.code_scales_[d]));
  }
  return g;
}

graph_parts graph_index::parts() const {
  graph_parts p{items_, ids_, m_, bottom_, {}, levels_, codes_, code_scales_, exact_last_, entry_};
  for (auto& node : upper_)
    p.upper.insert(p.upper.end(), node.begin(), node.end());
  return p;
}

plain_expected<graph_index> graph_index::from_parts(graph_parts p) {
  auto n = static_cast<size_t>(p.items.rows());
  auto dim = static_cast<size_t>(p.items.cols());
  auto bad = [](const std::string& what) {
    return plain_error{errc::corrupt_file, "graph index: " + what};
  };
  if (n == 0 || dim == 0 || p.m < 2 || p.m > 4096)
    return bad("no items, or m below 2 or above 4096");
  if (p.ids.size() != n || p.levels.size() != n || p.bottom.size() != n * (1 + 2 * p.m) ||
      p.entry >= n)
    return bad("ids, levels, bottom layer or entry disagree with " + std::to_string(n) + " items");
  if (!p.items.allFinite())
    return bad("a non-finite item");
  size_t upper_words = 0;
  for (auto level : p.levels)
    upper_words += level * (1 + p.m);
  if (p.upper.size() != upper_words)
    return bad("upper layers of " + std::to_string(p.upper.size()) + " words, the levels imply " +
               std::to_string(upper_words));
  auto code_dims = p.code_scales.size();
  if ((code_dims != 0 && code_dims != dim && code_dims + 1 != dim) ||
      p.codes.size() != n * code_dims || (p.exact_last.size() != (code_dims + 1 == dim ? n : 0)))
    return bad("codes, scales or exact last coordinates disagree with the items");
  // Every block: a count within its capacity, links to items that have the block's level.
  auto block_ok = [&](const uint32_t* block, size_t capacity, size_t level) {
    if (block[0] > capacity)
      return false;
    for (size_t j = 1; j <= block[0]; ++j)
      if (block[j] >= n || p.levels[block[j]] < level)
        return false;
    return true;
  };
  bool links_ok = true;
  for (size_t i = 0, at = 0; links_ok && i < n; ++i) {
    links_ok = block_ok(p.bottom.data() + i * (1 + 2 * p.m), 2 * p.m, 0);
    for (size_t level = 1; links_ok && level <= p.levels[i]; ++level, at += 1 + p.m)
      links_ok = block_ok(p.upper.data() + at, p.m, level);
  }
  if (!links_ok)
    return bad("a link count above its capacity, or a link past the items or their levels");
  graph_index g;
  g.items_ = std::move(p.items);
  g.ids_ = std::move(p.ids);
  g.m_ = p.m;
  g.aug_.assign(n, 0.0f);
  g.bottom_ = std::move(p.bottom);
  g.levels_ = std::move(p.levels);
  g.upper_.resize(n);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    auto words = g.levels_[i] * (1 + g.m_);
    g.upper_[i].assign(p.upper.begin() + static_cast<std::ptrdiff_t>(at),
                       p.upper.begin() + static_cast<std::ptrdiff_t>(at + words));
    at += words;
  }
  g.codes_ = std::move(p.codes);
  g.code_scales_ = std::move(p.code_scales);
  g.code_dims_ = code_dims;
  g.exact_last_ = std::move(p.exact_last);
  g.entry_ = p.entry;
  g.top_level_ = g.levels_[p.entry];
  return g;
}

std::vector<hit> graph_index::search_one(const float* query, size_t k, size_t ef,
                                         scratch& s) const {
  auto cur = descend(query, 0.0f, entry_, 0);
  if (codes_.empty()) {
    beam(exact_scorer{*this, query, 0.0f}, cur, ef, 0, s, nullptr);
  } else {
    s.scaled.assign(query, query + dim());
    for (size_t d = 0; d < code_dims_; ++d)
      s.scaled[d] *= code_scales_[d];
    beam(code_scorer{*this, s.scaled.data()}, cur, ef, 0, s, nullptr);
    for (auto& [sc, node] : s.results)
      sc = score(query, 0.0f, node);
  }
  std::vector<hit> hits;
  for (auto& [sc, node] : s.results)
    hits.push_back({sc, ids_[node]});
  std::sort(hits.begin(), hits.end(), ranks_before);
  hits.resize(std::min(k, hits.size()));
  return hits;
}

plain_expected<std::vector<std::vector<hit>>> graph_index::search(
  const row_matrix& queries, size_t k, const graph_search_options& o) const {
  if (auto err = check_queries(queries, dim(), size(), k))
    return err;
  auto nq = static_cast<size_t>(queries.rows());
  std::vector<std::vector<hit>> out(nq);
  auto ef = std::max(o.ef, k);
  parallel_ranges(nq, o.threads, [&](size_t, size_t begin, size_t end) {
    scratch s;
    for (size_t q = begin; q < end; ++q)
      out[q] = search_one(queries.row(static_cast<Eigen::Index>(q)).data(), k, ef, s);
  });
  return out;
}

} // namespace darcy::compute::mips
