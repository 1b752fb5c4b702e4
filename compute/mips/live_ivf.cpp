#include "compute/mips/live_ivf.hpp"

#include <algorithm>
#include <cmath>

#include "compute/mips/int8_dot.hpp"
#include "compute/mips/kmeans.hpp"

namespace darcy::compute::mips {

namespace {

constexpr size_t max_sample = 65536;

using scored = std::pair<float, uint32_t>;

/// Min-heap order on scores (the worst kept row on top); ties keep the smaller id.
bool heap_order(const scored& a, const scored& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

/// The code of `row`'s direction: scale * code ≈ row / norm.
void encode(const float* row, size_t dim, int8_t* code, float& scale, float& norm) {
  double sq = 0;
  for (size_t d = 0; d < dim; ++d)
    sq += double{row[d]} * row[d];
  norm = static_cast<float>(std::sqrt(sq));
  float top = 0;
  for (size_t d = 0; d < dim; ++d)
    top = std::max(top, std::abs(row[d]));
  scale = top > 0 ? top / norm / 127.0f : 1.0f;
  float inv = top > 0 ? 127.0f / top : 0.0f;
  for (size_t d = 0; d < dim; ++d)
    code[d] = static_cast<int8_t>(std::lround(row[d] * inv));
}

} // namespace

live_ivf::live_ivf(size_t dim, live_ivf_options o) : dim_(dim), o_(o), rng_(o.seed) {
  parts_[0].lists.resize(1);
}

size_t live_ivf::lists() const {
  return parts_[current_].lists.size();
}

bool live_ivf::contains(uint32_t id) const {
  return id < places_.size() && places_[id].part >= 0;
}

size_t live_ivf::bytes() const {
  size_t total = places_.capacity() * sizeof(place);
  for (auto& p : parts_) {
    total += static_cast<size_t>(p.centroids.size() + p.directions.size() + p.half_norms.size()) *
             sizeof(float);
    for (auto& l : p.lists)
      total += l.ids.capacity() * sizeof(uint32_t) + l.codes.capacity() +
               (l.scales.capacity() + l.norms.capacity()) * sizeof(float) + sizeof(list);
  }
  return total;
}

size_t live_ivf::nearest_list(const partition& p, const float* unit) const {
  if (p.centroids.rows() == 0)
    return 0;
  Eigen::Map<const Eigen::VectorXf> u(unit, static_cast<Eigen::Index>(dim_));
  // The nearest centroid by L2, as k-means filed the sample: the largest u·c - |c|^2 / 2.
  Eigen::VectorXf scores = p.centroids * u - p.half_norms;
  Eigen::Index best = 0;
  scores.maxCoeff(&best);
  return static_cast<size_t>(best);
}

void live_ivf::append(int part, uint32_t list_no, uint32_t id, const int8_t* code, float scale,
                      float norm) {
  auto& p = parts_[part];
  auto& l = p.lists[list_no];
  if (id >= places_.size())
    places_.resize(std::max<size_t>(id + 1, places_.size() * 3 / 2));
  places_[id] = {static_cast<int8_t>(part), list_no, static_cast<uint32_t>(l.ids.size())};
  l.ids.push_back(id);
  l.codes.insert(l.codes.end(), code, code + dim_);
  l.scales.push_back(scale);
  l.norms.push_back(norm);
  ++p.rows;
  ++places_size_;
}

void live_ivf::erase(place at) {
  auto& p = parts_[at.part];
  auto& l = p.lists[at.list];
  auto last = l.ids.size() - 1;
  auto gone = l.ids[at.pos];
  if (at.pos != last) {
    l.ids[at.pos] = l.ids[last];
    std::copy_n(l.codes.begin() + static_cast<std::ptrdiff_t>(last * dim_), dim_,
                l.codes.begin() + static_cast<std::ptrdiff_t>(size_t{at.pos} * dim_));
    l.scales[at.pos] = l.scales[last];
    l.norms[at.pos] = l.norms[last];
    places_[l.ids[at.pos]].pos = at.pos;
  }
  l.ids.pop_back();
  l.codes.resize(last * dim_);
  l.scales.pop_back();
  l.norms.pop_back();
  places_[gone].part = -1;
  --p.rows;
  --places_size_;
}

void live_ivf::upsert(uint32_t id, std::span<const float> row) {
  if (contains(id))
    erase(places_[id]);
  std::vector<int8_t> code(dim_);
  float scale = 0, norm = 0;
  encode(row.data(), dim_, code.data(), scale, norm);
  std::vector<float> unit(dim_);
  for (size_t d = 0; d < dim_; ++d)
    unit[d] = scale * static_cast<float>(code[d]);
  auto list_no = nearest_list(parts_[current_], unit.data());
  append(current_, static_cast<uint32_t>(list_no), id, code.data(), scale, norm);
}

void live_ivf::remove(uint32_t id) {
  if (contains(id))
    erase(places_[id]);
}

bool live_ivf::training_due() const {
  if (retraining())
    return false;
  auto n = size();
  if (trained_rows_ == 0)
    return n >= std::max<size_t>(o_.train_rows, 8);
  return n > 4 * trained_rows_;
}

live_ivf::training_plan live_ivf::plan_training() {
  training_plan plan;
  plan.rows = size();
  plan.generation = generation_;
  plan.seed = rng_();
  plan.lists = o_.lists != 0
                 ? size_t{o_.lists}
                 : std::clamp<size_t>(static_cast<size_t>(std::sqrt(double(plan.rows))), 8, 4096);
  // A uniform sample of the rows' directions, decoded from their codes.
  auto take = std::min(plan.rows, max_sample);
  plan.sample.resize(static_cast<Eigen::Index>(take), static_cast<Eigen::Index>(dim_));
  size_t seen = 0, kept = 0;
  for (auto& p : parts_)
    for (auto& l : p.lists)
      for (size_t r = 0; r < l.ids.size(); ++r, ++seen) {
        // Reservoir sampling: row `seen` replaces a kept one with probability take / (seen + 1).
        size_t slot = kept < take ? kept++ : std::uniform_int_distribution<size_t>{0, seen}(rng_);
        if (slot >= take)
          continue;
        for (size_t d = 0; d < dim_; ++d)
          plan.sample(static_cast<Eigen::Index>(slot), static_cast<Eigen::Index>(d)) =
            l.scales[r] * static_cast<float>(l.codes[r * dim_ + d]);
      }
  return plan;
}

row_matrix live_ivf::train(const training_plan& plan) {
  auto points = static_cast<size_t>(plan.sample.rows());
  return kmeans(plan.sample,
                {.clusters = std::min(plan.lists, points), .iterations = 8, .seed = plan.seed});
}

bool live_ivf::install(const training_plan& plan, row_matrix centroids) {
  if (retraining() || plan.generation != generation_ || centroids.cols() != Eigen::Index(dim_))
    return false;
  auto fresh = 1 - current_;
  auto& p = parts_[fresh];
  p = {};
  p.centroids = std::move(centroids);
  p.half_norms = 0.5f * p.centroids.rowwise().squaredNorm();
  p.directions = p.centroids;
  normalise_rows(p.directions);
  p.lists.resize(static_cast<size_t>(p.centroids.rows()));
  old_ = current_;
  current_ = fresh;
  trained_rows_ = plan.rows;
  ++generation_;
  return true;
}

bool live_ivf::step(size_t budget, bool may_train) {
  if (may_train && training_due()) {
    auto plan = plan_training();
    install(plan, train(plan));
  }
  if (!retraining())
    return false;
  auto& from = parts_[old_];
  std::vector<float> unit(dim_);
  for (size_t moved = 0; moved < budget && from.rows > 0; ++moved) {
    auto& l = *std::find_if(from.lists.rbegin(), from.lists.rend(),
                            [](const list& x) { return !x.ids.empty(); });
    auto r = l.ids.size() - 1;
    auto id = l.ids[r];
    std::vector<int8_t> code(l.codes.begin() + static_cast<std::ptrdiff_t>(r * dim_),
                             l.codes.end());
    auto scale = l.scales[r], norm = l.norms[r];
    erase(places_[id]);
    for (size_t d = 0; d < dim_; ++d)
      unit[d] = scale * static_cast<float>(code[d]);
    auto list_no = nearest_list(parts_[current_], unit.data());
    append(current_, static_cast<uint32_t>(list_no), id, code.data(), scale, norm);
  }
  if (from.rows == 0) {
    from = {};
    old_ = -1;
  }
  return retraining();
}

void live_ivf::scan(const partition& p, const float* query, size_t probes, bool unit,
                    size_t candidates, std::vector<scored>& heap) const {
  std::vector<uint32_t> chosen;
  if (p.centroids.rows() == 0) {
    chosen.push_back(0);
  } else {
    Eigen::Map<const Eigen::VectorXf> q(query, static_cast<Eigen::Index>(dim_));
    Eigen::VectorXf scores = p.directions * q;
    std::vector<uint32_t> order(static_cast<size_t>(scores.size()));
    for (uint32_t i = 0; i < order.size(); ++i)
      order[i] = i;
    auto take = std::min(probes, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take), order.end(),
                      [&](uint32_t a, uint32_t b) {
                        return scores(a) > scores(b) || (scores(a) == scores(b) && a < b);
                      });
    chosen.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take));
  }
  for (auto list_no : chosen) {
    auto& l = p.lists[list_no];
    for (size_t r = 0; r < l.ids.size(); ++r) {
      float s = l.scales[r] * dot_codes(query, l.codes.data() + r * dim_, dim_);
      if (!unit)
        s *= l.norms[r];
      scored x{s, l.ids[r]};
      if (heap.size() < candidates) {
        heap.push_back(x);
        std::push_heap(heap.begin(), heap.end(), heap_order);
      } else if (heap_order(x, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), heap_order);
        heap.back() = x;
        std::push_heap(heap.begin(), heap.end(), heap_order);
      }
    }
  }
}

std::vector<uint32_t> live_ivf::search(std::span<const float> query, size_t candidates,
                                       size_t probes, bool unit) const {
  std::vector<scored> heap;
  if (candidates == 0)
    return {};
  heap.reserve(candidates + 1);
  scan(parts_[current_], query.data(), std::max<size_t>(probes, 1), unit, candidates, heap);
  if (old_ >= 0)
    scan(parts_[old_], query.data(), std::max<size_t>(probes, 1), unit, candidates, heap);
  std::sort_heap(heap.begin(), heap.end(), heap_order);
  std::vector<uint32_t> ids;
  for (auto& [s, id] : heap)
    ids.push_back(id);
  return ids;
}

} // namespace darcy::compute::mips
