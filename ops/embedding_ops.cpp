#include "ops/embedding_ops.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/embedding/candidate_sampler.hpp"
#include "actors/embedding/direct_embedding.hpp"
#include "actors/embedding/key_routing.hpp"
#include "actors/embedding/shard_client.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "ops/ship_files.hpp"
#include "runtime/ask.hpp"
#include "runtime/log.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::ops {

namespace {

caf::expected<embedding_master_actor> service_with(session& s, const de_config& config,
                                                   const std::string& name) {
  auto cfg = config;
  cfg.name = name;
  if (auto err = s.ensure_embedding(cfg))
    return err;
  return s.embeddings();
}

/// Ids of direct lookup handles (for messages; the route is what backward uses).
std::atomic<uint64_t> direct_lookups{0};

/// The calling thread's lookup_deadline_scope, if any.
thread_local lookup_deadline_scope* deadline_scope = nullptr;

} // namespace

struct lookup_handle::direct_route {
  std::shared_ptr<const actors::routed_batch> route;
  /// Set when the lookup went to the shards of another process, which keep its keys under the
  /// handle's id; unset when this process holds the shards (the direct path).
  std::shared_ptr<const actors::shard_client> shards;
  /// Held while the gradients are applied; spent after the first success.
  std::mutex mutex;
  bool spent = false;
};

caf::error lookup_handle::direct_backward(const std::vector<std::span<const float>>& grads,
                                          int64_t step) const {
  std::lock_guard<std::mutex> guard{direct_->mutex};
  if (direct_->spent)
    return make_error(errc::not_found,
                      "lookup handle " + std::to_string(id_) + " was used already");
  if (direct_->shards) {
    if (auto err = direct_->shards->backward(*direct_->route, id_, grads, step))
      return err;
  } else {
    auto direct = session_->direct_embeddings();
    if (direct == nullptr)
      return make_error(errc::invalid_argument, "a direct lookup handle outlived its service");
    std::shared_lock<std::shared_mutex> gate{session_->direct_gate()};
    if (auto err = direct->update(*direct_->route, grads, step))
      return err;
  }
  direct_->spent = true;
  return {};
}

caf::error lookup_handle::backward(const std::vector<const matrix*>& grads, int64_t step) const {
  if (session_ == nullptr || id_ == 0)
    return make_error(errc::invalid_argument,
                      "backward on a lookup handle made without backward in mind");
  if (grads.size() != rows_.size())
    return make_error(errc::dimension_mismatch, std::to_string(grads.size()) +
                                                  " gradient matrices for " +
                                                  std::to_string(rows_.size()) + " tables");
  for (size_t t = 0; t < grads.size(); ++t) {
    auto& g = *grads[t];
    if (static_cast<size_t>(g.rows()) != rows_[t] || static_cast<size_t>(g.cols()) != dims_[t])
      return make_error(errc::dimension_mismatch, "gradients are " + std::to_string(g.rows()) +
                                                    "x" + std::to_string(g.cols()) + " for " +
                                                    std::to_string(rows_[t]) + " rows of dim " +
                                                    std::to_string(dims_[t]));
  }
  if (direct_) {
    std::vector<std::span<const float>> spans;
    for (auto* g : grads)
      spans.emplace_back(g->data(), static_cast<size_t>(g->size()));
    return direct_backward(spans, step);
  }
  std::vector<shared_floats> buffers;
  for (auto* g : grads)
    buffers.emplace_back(std::vector<float>(g->data(), g->data() + g->size()));
  auto master = session_->embeddings();
  if (!master)
    return std::move(master.error());
  auto ok = runtime::ask<ok_atom>(session_->system(), *master, session_->timeout(),
                                  backward_atom::value, id_, std::move(buffers), step);
  return ok ? caf::error{} : std::move(ok.error());
}

caf::error lookup_handle::backward(const matrix& grads, int64_t step) const {
  return backward(std::vector<const matrix*>{&grads}, step);
}

caf::error lookup_handle::backward(std::span<const float> grads, int64_t step) const {
  if (rows_.size() != 1 || grads.size() != rows_[0] * dims_[0])
    return make_error(errc::dimension_mismatch,
                      std::to_string(grads.size()) + " gradient values for " +
                        std::to_string(rows_.empty() ? 0 : rows_[0]) + " rows of dim " +
                        std::to_string(dims_.empty() ? 0 : dims_[0]));
  matrix m = Eigen::Map<const matrix>(grads.data(), static_cast<Eigen::Index>(rows_[0]),
                                      static_cast<Eigen::Index>(dims_[0]));
  return backward(m, step);
}

lookup_deadline_scope::lookup_deadline_scope(std::chrono::steady_clock::time_point deadline,
                                             bool allow_partial)
  : limits_{deadline, allow_partial, {}} {
  deadline_scope = this;
}

lookup_deadline_scope::~lookup_deadline_scope() {
  deadline_scope = nullptr;
}

caf::expected<multi_lookup_result> dynamic_embedding_lookup(session& s,
                                                            std::vector<table_lookup> tables,
                                                            bool for_backward) {
  caf::expected<embedding_master_actor> master =
    make_error(errc::empty_batch, "a lookup names no table");
  std::vector<table_keys> request;
  std::vector<size_t> rows, dims;
  for (auto& t : tables) {
    master = service_with(s, *t.config, t.name);
    if (!master)
      return std::move(master.error());
    auto keys = t.hashed.empty() ? actors::hash_keys(t.keys) : std::move(t.hashed);
    rows.push_back(keys.size());
    dims.push_back(t.config->dim);
    request.push_back({t.name, std::move(keys)});
  }
  if (!master)
    return std::move(master.error());
  multi_lookup_result result;
  // Row matrices for the direct paths to write into.
  auto row_buffers = [&] {
    std::vector<std::span<float>> out;
    for (size_t t = 0; t < tables.size(); ++t) {
      auto& m = result.rows.emplace_back(static_cast<Eigen::Index>(rows[t]),
                                         static_cast<Eigen::Index>(dims[t]));
      out.emplace_back(m.data(), static_cast<size_t>(m.size()));
    }
    return out;
  };
  if (auto shards = s.shard_client()) {
    auto* deadline = for_backward || !deadline_scope ? nullptr : &deadline_scope->limits();
    auto kept = shards->lookup(request, row_buffers(), for_backward, deadline);
    if (!kept)
      return std::move(kept.error());
    std::shared_ptr<lookup_handle::direct_route> route;
    if (for_backward) {
      route = std::make_shared<lookup_handle::direct_route>();
      route->route = std::move(kept->route);
      route->shards = std::move(shards);
    }
    result.handle =
      lookup_handle{&s, kept->handle, std::move(rows), std::move(dims), std::move(route)};
    return result;
  }
  if (auto direct = s.direct_embeddings()) {
    auto out = row_buffers();
    std::shared_lock<std::shared_mutex> gate{s.direct_gate()};
    auto looked_up = direct->lookup(request, out);
    if (!looked_up)
      return std::move(looked_up.error());
    std::shared_ptr<lookup_handle::direct_route> route;
    uint64_t id = 0;
    if (for_backward) {
      route = std::make_shared<lookup_handle::direct_route>();
      route->route = std::move(*looked_up);
      id = ++direct_lookups;
    }
    result.handle = lookup_handle{&s, id, std::move(rows), std::move(dims), std::move(route)};
    return result;
  }
  auto reply = runtime::ask<lookup_reply>(s.system(), *master, s.timeout(), lookup_atom::value,
                                          std::move(request), for_backward);
  if (!reply)
    return std::move(reply.error());
  if (reply->rows.size() != tables.size())
    return make_error(errc::dimension_mismatch, "the service answered " +
                                                  std::to_string(reply->rows.size()) +
                                                  " tables for " + std::to_string(tables.size()));
  for (size_t t = 0; t < tables.size(); ++t) {
    auto values = reply->rows[t].values();
    if (values.size() != rows[t] * dims[t])
      return make_error(errc::dimension_mismatch, "the service answered " +
                                                    std::to_string(values.size()) + " values for " +
                                                    std::to_string(rows[t]) + " keys");
    result.rows.emplace_back(Eigen::Map<const matrix>(
      values.data(), static_cast<Eigen::Index>(rows[t]), static_cast<Eigen::Index>(dims[t])));
  }
  result.handle = lookup_handle{&s, reply->handle, std::move(rows), std::move(dims)};
  return result;
}

caf::expected<lookup_result> dynamic_embedding_lookup(session& s, std::vector<std::string> keys,
                                                      const de_config& config,
                                                      const std::string& name, bool for_backward) {
  std::vector<table_lookup> tables;
  tables.push_back({&config, name, std::move(keys)});
  auto r = dynamic_embedding_lookup(s, std::move(tables), for_backward);
  if (!r)
    return std::move(r.error());
  return lookup_result{std::move(r->rows.front()), std::move(r->handle)};
}

caf::error check_logit_inputs(const char* op,
                              const std::vector<std::vector<std::string>>& positive_keys,
                              const matrix& activations, uint32_t dim) {
  auto batch = positive_keys.size();
  if (batch == 0)
    return make_error(errc::empty_batch, std::string{op} + " needs at least one example");
  if (static_cast<size_t>(activations.rows()) != batch ||
      static_cast<size_t>(activations.cols()) != dim)
    return make_error(errc::dimension_mismatch,
                      "activations are " + std::to_string(activations.rows()) + "x" +
                        std::to_string(activations.cols()) + ", expected " + std::to_string(batch) +
                        "x" + std::to_string(dim));
  for (size_t b = 0; b < batch; ++b)
    if (positive_keys[b].empty())
      return make_error(errc::invalid_argument,
                        "example " + std::to_string(b) + " has no positive key");
  return {};
}

caf::expected<sampled_logits_result> sampled_logits(
  session& s, const std::vector<std::vector<std::string>>& positive_keys, const matrix& activations,
  uint32_t num_sampled, const de_config& config, const std::string& name, uint64_t seed,
  bool at_most) {
  if (auto err = check_logit_inputs("sampled_logits", positive_keys, activations, config.dim))
    return err;
  auto batch = positive_keys.size();
  if (num_sampled == 0)
    return make_error(errc::invalid_argument, "sampled_logits needs num_sampled >= 1");
  size_t width = 0;
  std::set<std::string> unique_positives;
  for (size_t b = 0; b < batch; ++b) {
    width = std::max(width, positive_keys[b].size());
    unique_positives.insert(positive_keys[b].begin(), positive_keys[b].end());
  }
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  auto sampler = s.sampler();
  if (!sampler)
    return std::move(sampler.error());
  std::vector<std::string> positives{unique_positives.begin(), unique_positives.end()};
  auto draw = [&](uint32_t n) {
    return runtime::ask<sample_result>(s.system(), *sampler, s.timeout(), sample_atom::value, name,
                                       positives, n, seed);
  };
  auto drawn = draw(num_sampled);
  // The arguments were checked above, so invalid_argument means that the table holds nothing
  // but these positives yet (a first step): the positives alone, with their probabilities.
  if (!drawn && is(drawn.error(), errc::invalid_argument))
    drawn = draw(0);
  if (!drawn)
    return std::move(drawn.error());
  if (drawn->rows < num_sampled && drawn->keys.size() > unique_positives.size()) {
    if (!at_most)
      return make_error(errc::invalid_argument, "sampled_logits: num_sampled " +
                                                  std::to_string(num_sampled) + " is above the " +
                                                  std::to_string(drawn->rows) + " rows of '" +
                                                  name + "'");
    uint64_t held = 0;
    for (size_t i = 0; i < drawn->keys.size(); ++i)
      held += drawn->is_positive[i] && drawn->probs[i] > actors::absent_positive_prob;
    drawn = draw(static_cast<uint32_t>(drawn->rows - std::min(drawn->rows, held)));
    if (!drawn)
      return std::move(drawn.error());
  }
  // The n of log(n * Q): the negatives drawn (num_sampled for a first step, which has none).
  auto negatives = drawn->keys.size() - unique_positives.size();
  if (negatives == 0)
    negatives = num_sampled;
  sampled_logits_result result;
  std::vector<double> negative_probs;
  std::unordered_map<std::string_view, double> positive_prob;
  for (size_t i = 0; i < drawn->keys.size(); ++i) {
    if (drawn->is_positive[i]) {
      positive_prob.emplace(drawn->keys[i], drawn->probs[i]);
    } else {
      result.sampled_keys.push_back(drawn->keys[i]);
      negative_probs.push_back(drawn->probs[i]);
    }
  }
  // Each distinct key is looked up once, in one request, counted in its row's frequency as
  // often as it is a positive: a negative is read, not counted, so that the sampler's own
  // draws never raise the frequencies it draws by (nor make a tier write the row back). The
  // negatives, shared by every example, are resolved once; the keys are views into
  // positive_keys and result.sampled_keys, which outlive them.
  auto columns = width + result.sampled_keys.size();
  std::vector<std::string_view> keys;
  std::vector<uint32_t> counts;
  std::unordered_map<std::string_view, int64_t> row_of_key;
  auto row_for = [&](std::string_view key, uint32_t count) {
    auto [at, fresh] = row_of_key.emplace(key, static_cast<int64_t>(keys.size()));
    if (fresh) {
      keys.push_back(key);
      counts.push_back(0);
    }
    counts[static_cast<size_t>(at->second)] += count;
    return at->second;
  };
  std::vector<std::vector<int64_t>> positive_rows(batch);
  std::vector<int64_t> negative_rows;
  for (size_t b = 0; b < batch; ++b) {
    for (auto& key : positive_keys[b])
      positive_rows[b].push_back(row_for(key, 1));
    if (b == 0)
      for (auto& key : result.sampled_keys)
        negative_rows.push_back(row_for(key, 0));
  }
  key_batch counted;
  counted.reserve(keys.size(), keys.size() * 8);
  for (size_t k = 0; k < keys.size(); ++k)
    counted.push_back(keys[k], compute::hash_key(keys[k]), counts[k]);
  std::vector<table_lookup> lookup;
  lookup.push_back({&config, name, {}, std::move(counted)});
  auto looked_up = dynamic_embedding_lookup(s, std::move(lookup), true);
  if (!looked_up)
    return std::move(looked_up.error());
  auto rows = lookup_result{std::move(looked_up->rows.front()), std::move(looked_up->handle)};
  // The log of each column's expected count, n Q(key): positives' by key, negatives' by column.
  std::vector<float> negative_log_q;
  for (auto q : negative_probs)
    negative_log_q.push_back(static_cast<float>(std::log(static_cast<double>(negatives) * q)));
  result.logits = matrix::Constant(static_cast<Eigen::Index>(batch),
                                   static_cast<Eigen::Index>(columns), masked_logit);
  result.labels =
    matrix::Zero(static_cast<Eigen::Index>(batch), static_cast<Eigen::Index>(columns));
  result.row_of.assign(batch * columns, -1);
  result.column_keys.resize(batch);
  for (size_t b = 0; b < batch; ++b) {
    auto& cols = result.column_keys[b];
    cols = positive_keys[b];
    cols.resize(width);
    cols.insert(cols.end(), result.sampled_keys.begin(), result.sampled_keys.end());
    auto& own = positive_rows[b];
    auto share = 1.0f / static_cast<float>(own.size());
    auto bi = static_cast<Eigen::Index>(b);
    auto logit = [&](size_t c, int64_t row, float log_q) {
      result.row_of[b * columns + c] = row;
      result.logits(bi, static_cast<Eigen::Index>(c)) =
        activations.row(bi).dot(rows.rows.row(row)) - log_q;
    };
    for (size_t c = 0; c < own.size(); ++c) {
      auto q = positive_prob.at(positive_keys[b][c]);
      logit(c, own[c], static_cast<float>(std::log(static_cast<double>(negatives) * q)));
      result.labels(bi, static_cast<Eigen::Index>(c)) = share;
    }
    for (size_t j = 0; j < negative_rows.size(); ++j) {
      auto c = width + j;
      if (std::find(own.begin(), own.end(), negative_rows[j]) != own.end()) {
        cols[c].clear(); // an accidental hit: masked like padding
        continue;
      }
      logit(c, negative_rows[j], negative_log_q[j]);
    }
  }
  result.activations = activations;
  result.rows = std::move(rows.rows);
  result.handle = std::move(rows.handle);
  return result;
}

caf::expected<matrix> sampled_logits_result::backward(const matrix& dlogits, int64_t step) const {
  if (dlogits.rows() != logits.rows() || dlogits.cols() != logits.cols())
    return make_error(errc::dimension_mismatch, "dlogits do not have the shape of the logits");
  auto columns = static_cast<size_t>(logits.cols());
  matrix dact = matrix::Zero(activations.rows(), activations.cols());
  matrix grads = matrix::Zero(rows.rows(), rows.cols());
  for (size_t b = 0; b < column_keys.size(); ++b)
    for (size_t c = 0; c < columns; ++c) {
      auto row = row_of[b * columns + c];
      if (row < 0)
        continue;
      auto bi = static_cast<Eigen::Index>(b);
      auto g = dlogits(bi, static_cast<Eigen::Index>(c));
      grads.row(row) += g * activations.row(bi);
      dact.row(bi) += g * rows.row(row);
    }
  if (auto err = handle.backward(grads, step))
    return err;
  return dact;
}

caf::expected<top_k_result> top_k(session& s, const matrix& activations, uint32_t k,
                                  const de_config& config, const std::string& name,
                                  top_k_score score) {
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  std::vector<float> queries(activations.data(), activations.data() + activations.size());
  return runtime::ask<top_k_result>(s.system(), *master, s.timeout(), top_k_atom::value, name,
                                    std::move(queries), k, score);
}

caf::expected<top_k_result> approximate_top_k(session& s, const matrix& activations, uint32_t k,
                                              const de_config& config, const std::string& name,
                                              top_k_score score, const ann_query& q) {
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  std::vector<float> queries(activations.data(), activations.data() + activations.size());
  if (auto direct = s.direct_embeddings()) {
    std::shared_lock<std::shared_mutex> gate{s.direct_gate()};
    return direct->approximate_top_k(name, queries, k, score, q);
  }
  return runtime::ask<top_k_result>(s.system(), *master, s.timeout(), top_k_atom::value, name,
                                    std::move(queries), k, score, q);
}

caf::expected<embedding_stats> stats(session& s, const std::string& name) {
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  return runtime::ask<embedding_stats>(s.system(), *master, s.timeout(), stats_atom::value, name);
}

caf::error flush(session& s) {
  auto shards = s.shard_client();
  return shards ? shards->flush() : caf::error{};
}

namespace {

/// On a cluster, the parts of checkpoint `m` under `path` that the shards wrote on other hosts,
/// fetched to this one, when the manifest is here (its master runs in this process), and the
/// checkpoints retention removed here removed there. Only for an absolute path: a relative one
/// names another folder on each host.
caf::error fetch_parts(session& s, const std::string& path, const checkpoint_manifest& m) {
  if (s.in_process() || !std::filesystem::path{path}.is_absolute())
    return {};
  stores::checkpoint_dir root{path};
  if (!root.read_manifest_of(m.checkpoint))
    return {};
  std::vector<file_info> parts;
  for (auto& entry : m.embeddings)
    for (auto& file : entry.files)
      parts.push_back({(std::filesystem::path{root.root()} / file.path).string(), file.checksum,
                       file.rows, file.bytes});
  return fetch_files(s, s.shard_nodes(), parts, root.root());
}

/// On a cluster, the files of the links `chain` under `path` (absolute, as for fetch_parts)
/// that the shards' hosts lack, sent to them, and the checkpoints retention removed here
/// removed there.
caf::error ship_links(session& s, const std::string& path,
                      const std::vector<checkpoint_manifest>& chain,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
  if (s.in_process() || !std::filesystem::path{path}.is_absolute())
    return {};
  stores::checkpoint_dir root{path};
  std::vector<std::string> files;
  for (auto& link : chain)
    for (auto& file : files_under((std::filesystem::path{root.root()} / link.checkpoint).string()))
      files.push_back(file);
  return ship_files(s, s.shard_nodes(), files, timeout, root.root());
}

/// A current checkpoint under `root` (absolute) whose parts never all reached this host (its
/// shards' host died between its manifest and their fetch, see save_as) cannot be restored:
/// the root's MANIFEST is pointed back at the newest checkpoint whose whole chain is here,
/// keeping the newer one's chain for retention to remove, and a warning says so. Nothing
/// changes when no checkpoint is whole: the restore then names the missing file.
void settle_on_a_whole_chain(const stores::checkpoint_dir& root) {
  if (!std::filesystem::path{root.root()}.is_absolute())
    return;
  auto current = root.read_manifest();
  auto whole = stores::newest_whole_checkpoint(root);
  if (!current || !whole || whole->checkpoint == current->checkpoint)
    return;
  if (auto err = root.commit(*whole, 2))
    return runtime::log_warn("checkpoints: {} cannot go back to {}: {}", root.root(),
                             whole->checkpoint, render(err));
  runtime::log_warn(
    "checkpoints: {}: the parts of checkpoint {} (step {}) never reached this "
    "host; restoring {} (step {}) instead",
    root.root(), current->checkpoint, current->step, whole->checkpoint, whole->step);
}

caf::error save_as(session& s, const std::string& path, const training_state& state,
                   uint32_t full_every, const std::string& restored) {
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  if (auto err = flush(s))
    return err;
  std::unique_lock<std::shared_mutex> gate{s.direct_gate()};
  std::vector<char> extra;
  caf::binary_serializer sink{s.system(), extra};
  auto copy = state;
  if (auto err = sink(copy.step, copy.input_position, copy.dense))
    return err;
  auto manifest = restored.empty()
                    ? runtime::ask<checkpoint_manifest>(
                        s.system(), *master, s.timeout(), save_atom::value, path, state.step,
                        std::string{extra.begin(), extra.end()}, full_every)
                    : runtime::ask<checkpoint_manifest>(
                        s.system(), *master, s.timeout(), save_atom::value, path, state.step,
                        std::string{extra.begin(), extra.end()}, full_every, restored);
  if (!manifest)
    return std::move(manifest.error());
  return fetch_parts(s, path, *manifest);
}

} // namespace

caf::error save(session& s, const std::string& path, const training_state& state,
                uint32_t full_every) {
  return save_as(s, path, state, full_every, {});
}

caf::error save_restored(session& s, const std::string& path, const training_state& state,
                         uint32_t full_every, const std::string& restored) {
  if (full_every == 0 || restored.empty())
    return make_error(errc::invalid_argument,
                      "save_restored: an incremental save after a restore names the checkpoint");
  return save_as(s, path, state, full_every, restored);
}

caf::error sync(session& s, const std::string& path, const checkpoint_manifest& link) {
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  if (auto err = ship_links(s, path, {link}))
    return err;
  auto ok = runtime::ask<ok_atom>(s.system(), *master, s.timeout(), sync_atom::value, path, link);
  return ok ? caf::error{} : std::move(ok.error());
}

caf::expected<restored_checkpoint> restore(session& s, const std::string& path,
                                           std::optional<std::chrono::milliseconds> timeout) {
  auto patience = timeout.value_or(s.timeout());
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  // A backward still on its way must not land on the restored rows.
  if (auto err = flush(s))
    return err;
  if (!s.in_process()) {
    stores::checkpoint_dir root{path};
    settle_on_a_whole_chain(root);
    if (auto head = root.read_manifest())
      if (auto chain = stores::read_chain(root, *head))
        if (auto err = ship_links(s, path, *chain, patience))
          return err;
  }
  std::unique_lock<std::shared_mutex> gate{s.direct_gate()};
  auto manifest =
    runtime::ask<checkpoint_manifest>(s.system(), *master, patience, restore_atom::value, path);
  if (!manifest)
    return std::move(manifest.error());
  restored_checkpoint result;
  std::set<std::string> names;
  for (auto& entry : manifest->embeddings) {
    result.embeddings.push_back(entry.config);
    names.insert(entry.config.name);
  }
  s.embeddings_restored(std::move(names));
  if (manifest->extra.empty())
    return result;
  std::vector<char> extra{manifest->extra.begin(), manifest->extra.end()};
  caf::binary_deserializer source{s.system(), extra};
  auto& state = result.state;
  if (auto err = source(state.step, state.input_position, state.dense))
    return make_error(errc::corrupt_file, "the checkpoint's training state: " + render(err));
  return result;
}

} // namespace darcy::ops
