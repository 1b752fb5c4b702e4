#include "stores/embedding/indexed_store.hpp"

#include <algorithm>

#include "compute/stats.hpp"
#include "compute/top_k.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

namespace {

constexpr size_t wait_ring = 4096;

double seconds(indexed_store::clock_type::duration d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

indexed_store::indexed_store(std::unique_ptr<embedding_store> inner, const ann_config& cfg)
  : forwarding_store(std::move(inner)),
    cfg_(cfg),
    index_(inner_->dim(), compute::mips::live_ivf_options{.lists = cfg.lists}) {
  waits_.reserve(wait_ring);
  inner_->set_erase_observer([this](std::string_view key) {
    note(key);
    erased(key);
  });
}

caf::expected<std::unique_ptr<indexed_store>> indexed_store::open(
  std::unique_ptr<embedding_store> inner, const ann_config& cfg) {
  std::unique_ptr<indexed_store> store{new indexed_store(std::move(inner), cfg)};
  auto err =
    store->inner_->scan([&](std::string_view key, std::span<const float>) { store->note(key); });
  if (err)
    return err;
  return store;
}

indexed_store::~indexed_store() {
  inner_->set_erase_observer({});
}

void indexed_store::note(std::string_view key) {
  if (waiting_.find(key) != waiting_.end())
    return;
  waiting_.emplace(key);
  queue_.emplace_back(std::string{key}, clock_type::now());
}

uint32_t indexed_store::id_of(std::string_view key) {
  if (auto i = ids_.find(key); i != ids_.end())
    return i->second;
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
    keys_[id] = key;
  } else {
    id = static_cast<uint32_t>(keys_.size());
    keys_.emplace_back(key);
  }
  ids_.emplace(key, id);
  return id;
}

void indexed_store::forget(std::string_view key) {
  auto i = ids_.find(key);
  if (i == ids_.end())
    return;
  index_.remove(i->second);
  keys_[i->second].clear();
  free_ids_.push_back(i->second);
  ids_.erase(i);
}

std::optional<compute::mips::live_ivf::training_plan> indexed_store::due_training() {
  if (!index_.training_due())
    return std::nullopt;
  return index_.plan_training();
}

bool indexed_store::install_training(const compute::mips::live_ivf::training_plan& plan,
                                     compute::row_matrix centroids) {
  return index_.install(plan, std::move(centroids));
}

caf::expected<bool> indexed_store::refresh(size_t budget, bool train) {
  std::vector<std::pair<std::string, clock_type::time_point>> batch;
  while (batch.size() < budget && !queue_.empty()) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
    waiting_.erase(batch.back().first);
  }
  std::vector<std::string_view> keys;
  for (auto& entry : batch)
    keys.push_back(entry.first);
  auto err = inner_->export_keys(
    keys, [&](const row_record& row) { index_.upsert(id_of(row.key), row.values); },
    [&](std::string_view key) { forget(key); });
  if (err) {
    // Nothing is lost: the rows wait again, ahead of those noted since.
    for (auto i = batch.rbegin(); i != batch.rend(); ++i)
      if (waiting_.emplace(i->first).second)
        queue_.push_front(std::move(*i));
    return err;
  }
  auto now = clock_type::now();
  for (auto& entry : batch) {
    auto wait = seconds(now - entry.second);
    if (waits_.size() < wait_ring)
      waits_.push_back(wait);
    else
      waits_[next_wait_] = wait;
    next_wait_ = (next_wait_ + 1) % wait_ring;
  }
  bool retraining = index_.step(budget, train);
  return retraining || !queue_.empty();
}

double indexed_store::oldest_pending_s() const {
  return queue_.empty() ? 0.0 : seconds(clock_type::now() - queue_.front().second);
}

caf::expected<top_k_result> indexed_store::search(const std::vector<float>& queries, uint32_t k,
                                                  top_k_score score, uint32_t probes,
                                                  uint32_t rerank) {
  auto dim = static_cast<Eigen::Index>(inner_->dim());
  bool with_bias = score == top_k_score::inner_product_bias;
  bool cosine = score == top_k_score::cosine;
  auto q = compute::extended_queries(queries, dim, with_bias, cosine);
  auto nq = q.rows();
  top_k_result result;
  result.offsets.push_back(0);
  result.staleness_s = oldest_pending_s();
  auto candidates = std::max<size_t>(rerank, k);
  for (Eigen::Index i = 0; i < nq; ++i) {
    auto ids = index_.search(std::span<const float>{q.row(i).data(), static_cast<size_t>(dim)},
                             candidates, probes, cosine);
    std::vector<std::string_view> keys;
    for (auto id : ids)
      keys.push_back(keys_[id]);
    compute::row_matrix rows(static_cast<Eigen::Index>(keys.size()), dim);
    // Copies: a row's key may live only as long as the callback (LevelDB).
    std::vector<std::string> found;
    auto err = inner_->export_keys(
      keys,
      [&](const row_record& row) {
        rows.row(static_cast<Eigen::Index>(found.size())) =
          Eigen::Map<const Eigen::RowVectorXf>(row.values.data(), dim);
        found.emplace_back(row.key);
      },
      [](std::string_view) {});
    if (err)
      return err;
    compute::row_matrix held = rows.topRows(static_cast<Eigen::Index>(found.size()));
    if (cosine)
      compute::normalise_rows(held);
    if (!found.empty()) {
      // Ties go to the smaller key, as the exact scan's merge orders them.
      std::vector<size_t> order(found.size());
      for (size_t j = 0; j < order.size(); ++j)
        order[j] = j;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return found[a] < found[b]; });
      compute::row_matrix sorted(held.rows(), dim);
      for (size_t j = 0; j < order.size(); ++j)
        sorted.row(static_cast<Eigen::Index>(j)) = held.row(static_cast<Eigen::Index>(order[j]));
      compute::row_matrix query = q.row(i);
      auto hits = compute::top_k_inner_product(query, sorted, {}, k);
      for (auto& h : (*hits)[0]) {
        result.keys.push_back(std::move(found[order[h.id]]));
        result.scores.push_back(h.score);
      }
    }
    result.offsets.push_back(static_cast<uint32_t>(result.keys.size()));
  }
  return result;
}

caf::error indexed_store::lookup(std::span<const std::string_view> keys,
                                 std::span<const uint64_t> hashes, std::span<float> out) {
  auto err = inner_->lookup(keys, hashes, lookup_counts(), out);
  // A lookup creates the rows it does not find (a failed one too, before it fails); the rows
  // it only reads are indexed already or waiting.
  for (auto key : keys)
    if (ids_.find(key) == ids_.end())
      note(key);
  return err;
}

caf::error indexed_store::update(std::span<const std::string_view> keys,
                                 std::span<const uint64_t> hashes, std::span<const float> grads,
                                 int64_t step) {
  auto err = inner_->update(keys, hashes, grads, step);
  for (auto key : keys)
    note(key);
  return err;
}

store_stats indexed_store::stats() const {
  auto s = inner_->stats();
  // The index and its two maps between keys and ids count as the store's memory.
  s.bytes += index_.bytes() + keys_.capacity() * sizeof(std::string) +
             free_ids_.capacity() * sizeof(uint32_t) +
             ids_.size() * (sizeof(std::string) + sizeof(uint32_t) + 2 * sizeof(void*));
  for (auto& key : keys_)
    if (key.size() >= sizeof(std::string))
      s.bytes += 2 * key.capacity(); // held by both maps when past the short-string buffer
  s.ann_rows = index_.size();
  s.ann_backlog = queue_.size();
  s.ann_staleness_p99_s = waits_.empty() ? 0.0 : compute::percentile(waits_, 0.99);
  return s;
}

caf::error indexed_store::import_row(const row_record& row) {
  auto err = inner_->import_row(row);
  note(row.key);
  return err;
}

caf::error indexed_store::remove_rows(std::span<const std::string_view> keys) {
  auto err = inner_->remove_rows(keys);
  for (auto key : keys)
    note(key);
  return err;
}

} // namespace darcy::stores
