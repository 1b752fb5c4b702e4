#include "apps/word2vec/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "apps/word2vec/run_fingerprint.hpp"
#include "compute/hash.hpp"
#include "compute/sampler.hpp"
#include "compute/word2vec.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "runtime/ask.hpp"
#include "runtime/log.hpp"
#include "runtime/process/machine.hpp"

namespace darcy::word2vec {

namespace {

using clock = std::chrono::steady_clock;
constexpr uint32_t no_slot = UINT32_MAX;
/// Lookups are split into requests of at most this many keys.
constexpr size_t max_request = size_t{1} << 20;

// Sentences order[first, end) of run_state::order.
struct batch_range {
  size_t first = 0;
  size_t end = 0;
  /// Tokens before this batch in its epoch.
  uint64_t word_offset = 0;
  uint64_t words = 0;
};

std::vector<batch_range> make_batches(const corpus& c, const std::vector<uint32_t>& order,
                                      uint32_t batch_words) {
  std::vector<batch_range> result;
  batch_range current;
  for (size_t i = 0; i < order.size(); ++i) {
    current.end = i + 1;
    current.words += c.sentence_ends[order[i]] - c.sentence_begin(order[i]);
    if (current.words >= batch_words || i + 1 == order.size()) {
      result.push_back(current);
      current = batch_range{i + 1, i + 1, current.word_offset + current.words, 0};
    }
  }
  return result;
}

// The model's keys: the words by frequency rank that occur at least min_count times (a
// prefix, since words are sorted by count), capped words sharing oov_key at the end. Rarer
// words are dropped from the sentences, as word2vec.c drops them, so they never reach the
// service: its tables, the vector file and neighbours hold admitted words only.
struct key_space {
  static constexpr uint32_t dropped = UINT32_MAX;
  size_t admitted = 0; // words seen at least min_count times
  size_t own = 0;      // words with their own key
  bool has_oov = false;
  std::vector<uint64_t> counts;

  key_space(const corpus& c, size_t cap, uint32_t min_count) {
    while (admitted < c.words.size() && c.words[admitted].count >= std::max(min_count, 1u))
      ++admitted;
    own = cap == 0 ? admitted : std::min(cap, admitted);
    has_oov = own < admitted;
    counts.resize(own + (has_oov ? 1 : 0));
    for (size_t i = 0; i < admitted; ++i)
      counts[std::min(i, own)] += c.words[i].count;
  }
  uint32_t of(uint32_t stat) const {
    return stat >= admitted ? dropped : static_cast<uint32_t>(std::min<size_t>(stat, own));
  }
  size_t size() const { return counts.size(); }
  std::string_view key_view(const corpus& c, uint32_t id) const {
    return id < own ? std::string_view{c.words[id].word} : std::string_view{oov_key};
  }
  std::string key(const corpus& c, uint32_t id) const { return std::string{key_view(c, id)}; }
};

de_config table_config(const train_options& o, bool input) {
  de_config cfg;
  cfg.name = o.name + (input ? ".in" : ".out");
  cfg.dim = o.dim;
  if (input) {
    cfg.init.kind = init_kind::uniform;
    cfg.init.low = -0.5f / static_cast<float>(o.dim);
    cfg.init.high = 0.5f / static_cast<float>(o.dim);
  } else {
    cfg.init.kind = init_kind::zeros;
  }
  cfg.init.seed = o.seed;
  // The local word2vec step is the update; the service applies it as gradient descent at
  // rate 1 on (old - new).
  cfg.optimizer.kind = optimizer_kind::sgd;
  cfg.optimizer.learning_rate = 1.0f;
  cfg.max_batch = static_cast<uint32_t>(max_request);
  if (auto dir = leveldb_store_dir(o.store); !dir.empty()) {
    // One database per table: shard_config appends each shard's folder below it.
    cfg.backend = backend_kind::leveldb;
    cfg.path = (std::filesystem::path{dir} / cfg.name).string();
  } else if (!o.store.empty()) {
    cfg.backend = backend_kind::redis;
    cfg.path = o.store;
    cfg.staleness_ms = o.store_staleness_ms;
  }
  return cfg;
}

// One training thread's scratch space, reused across batches.
struct worker {
  std::vector<uint32_t> in_slot, out_slot;
  std::vector<uint32_t> in_ids, out_ids;
  std::vector<uint32_t> sentence;
  /// Occurrences of each word in the batch's sentences, subsampled ones included, and the
  /// words counted: the counts the input table's lookup carries, so that its rows'
  /// frequencies (the service sampler's unigram) count the corpus as word2vec.c's table does.
  std::vector<uint32_t> occurrences, occurring;
  compute::sgns_plan plan;
  /// With the service's sampler: (plan entry, center) of each negative still to draw.
  std::vector<std::pair<size_t, uint32_t>> pending;

  explicit worker(size_t keys)
    : in_slot(keys, no_slot), out_slot(keys, no_slot), occurrences(keys, 0) {}

  void occurs(uint32_t id) {
    if (occurrences[id]++ == 0)
      occurring.push_back(id);
  }

  uint32_t slot(std::vector<uint32_t>& slots, std::vector<uint32_t>& ids, uint32_t id) {
    auto& s = slots[id];
    if (s == no_slot) {
      s = static_cast<uint32_t>(ids.size());
      ids.push_back(id);
    }
    return s;
  }

  void reset() {
    for (auto id : in_ids)
      in_slot[id] = no_slot;
    for (auto id : out_ids)
      out_slot[id] = no_slot;
    for (auto id : occurring)
      occurrences[id] = 0;
    in_ids.clear();
    out_ids.clear();
    occurring.clear();
    plan.entries.clear();
    pending.clear();
  }
};

struct run_state {
  const corpus& c;
  const train_options& o;
  const key_space& keys;
  std::vector<float> keep;
  compute::candidate_distribution negatives;
  compute::sigmoid_table sigmoid;
  std::vector<uint32_t> order;
  std::vector<batch_range> batches;
  uint64_t words_total = 0;
  /// compute::hash_key of each key id, computed once.
  std::vector<uint64_t> hashes;
  de_config in_cfg, out_cfg;
  /// With the service's sampler: key id of each key, and the batches sampled each way.
  std::unordered_map<std::string_view, uint32_t> id_of;
  mutable std::atomic<uint64_t> service_batches{0}, local_batches{0};
};

/// A pool of negatives for one batch from the service's sampler over the input table (whose
/// frequencies count each word's occurrences in the batches that looked it up), as key ids;
/// empty when the service holds no candidate yet.
caf::expected<std::vector<uint32_t>> service_negatives(ops::session& s, const run_state& rs,
                                                       size_t count, uint64_t seed) {
  auto sampler = s.sampler();
  if (!sampler)
    return std::move(sampler.error());
  auto drawn = runtime::ask<sample_result>(s.system(), *sampler, s.timeout(), sample_atom::value,
                                           rs.in_cfg.name, std::vector<std::string>{},
                                           static_cast<uint32_t>(count), seed);
  if (!drawn && is(drawn.error(), errc::invalid_argument))
    return std::vector<uint32_t>{};
  if (!drawn)
    return std::move(drawn.error());
  std::vector<uint32_t> ids;
  ids.reserve(drawn->keys.size());
  for (auto& key : drawn->keys)
    if (auto it = rs.id_of.find(key); it != rs.id_of.end())
      ids.push_back(it->second);
  return ids;
}

// Plans, looks up, trains and writes back one batch. Returns the pairs trained.
caf::expected<uint64_t> run_batch(ops::session& s, const run_state& rs, worker& w,
                                  uint64_t global_batch, float alpha) {
  const auto& o = rs.o;
  auto& range = rs.batches[global_batch % rs.batches.size()];
  std::mt19937_64 rng{compute::mix64(o.seed, global_batch)};
  std::uniform_real_distribution<float> unit{0.0f, 1.0f};
  w.reset();
  w.plan.negative = o.negative;
  bool service = o.sampler == negative_source::service;
  auto window = static_cast<int64_t>(o.window);
  for (size_t k = range.first; k < range.end; ++k) {
    auto si = rs.order[k];
    w.sentence.clear();
    for (auto t = rs.c.sentence_begin(si); t < rs.c.sentence_ends[si]; ++t) {
      auto id = rs.keys.of(rs.c.tokens[t].stat);
      if (id == key_space::dropped)
        continue;
      w.occurs(id);
      if (o.sample > 0 && rs.keep[id] < unit(rng))
        continue;
      w.sentence.push_back(id);
    }
    auto len = static_cast<int64_t>(w.sentence.size());
    for (int64_t pos = 0; pos < len; ++pos) {
      auto center = w.sentence[static_cast<size_t>(pos)];
      auto shrink = static_cast<int64_t>(rng() % o.window);
      for (int64_t a = shrink; a < window * 2 + 1 - shrink; ++a) {
        auto c = pos - window + a;
        if (a == window || c < 0 || c >= len)
          continue;
        auto context = w.sentence[static_cast<size_t>(c)];
        w.plan.entries.push_back(w.slot(w.in_slot, w.in_ids, context));
        w.plan.entries.push_back(w.slot(w.out_slot, w.out_ids, center));
        for (uint32_t k = 0; k < o.negative; ++k) {
          if (service) { // filled once the batch's pool is drawn
            w.pending.emplace_back(w.plan.entries.size(), center);
            w.plan.entries.push_back(compute::skipped_slot);
            continue;
          }
          auto neg = static_cast<uint32_t>(rs.negatives.draw(rng));
          w.plan.entries.push_back(neg == center ? compute::skipped_slot
                                                 : w.slot(w.out_slot, w.out_ids, neg));
        }
      }
    }
  }
  if (w.plan.entries.empty())
    return uint64_t{0};
  if (service) {
    auto pool = service_negatives(s, rs, std::min<size_t>(w.pending.size(), o.service_pool),
                                  compute::mix64(o.seed ^ 0x5a3, global_batch));
    if (!pool)
      return std::move(pool.error());
    ++(pool->empty() ? rs.local_batches : rs.service_batches);
    for (auto [at, center] : w.pending) {
      auto neg = pool->empty() ? static_cast<uint32_t>(rs.negatives.draw(rng))
                               : (*pool)[rng() % pool->size()];
      w.plan.entries[at] =
        neg == center ? compute::skipped_slot : w.slot(w.out_slot, w.out_ids, neg);
    }
  }
  auto keys_of = [&](const std::vector<uint32_t>& ids, bool counted) {
    key_batch result;
    result.reserve(ids.size(), ids.size() * 8);
    for (auto id : ids)
      result.push_back(rs.keys.key_view(rs.c, id), rs.hashes[id], counted ? w.occurrences[id] : 1);
    return result;
  };
  std::vector<ops::table_lookup> tables;
  tables.push_back({&rs.in_cfg, rs.in_cfg.name, {}, keys_of(w.in_ids, true)});
  tables.push_back({&rs.out_cfg, rs.out_cfg.name, {}, keys_of(w.out_ids, false)});
  auto looked_up = ops::dynamic_embedding_lookup(s, std::move(tables));
  if (!looked_up)
    return std::move(looked_up.error());
  auto& in_rows = looked_up->rows[0];
  auto& out_rows = looked_up->rows[1];
  ops::matrix work_in = in_rows;
  ops::matrix work_out = out_rows;
  auto span_of = [](ops::matrix& m) {
    return std::span<float>{m.data(), static_cast<size_t>(m.size())};
  };
  auto pairs =
    compute::train_sgns(w.plan, alpha, span_of(work_in), span_of(work_out), o.dim, rs.sigmoid);
  // Gradient descent at rate 1 on (old - new) turns each row into old + (new - old).
  in_rows -= work_in;
  out_rows -= work_out;
  auto step = static_cast<int64_t>(global_batch);
  std::vector<const ops::matrix*> grads{&in_rows, &out_rows};
  if (auto err = looked_up->handle.backward(grads, step))
    return err;
  return static_cast<uint64_t>(pairs);
}

} // namespace

std::vector<uint32_t> sentence_order(const corpus& c, const train_options& o) {
  std::vector<uint32_t> order(c.sentences());
  std::iota(order.begin(), order.end(), 0u);
  if (!o.in_order) {
    std::mt19937_64 rng{compute::mix64(o.seed, 0x5eed0f0bdeULL)};
    for (size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[rng() % i]);
  }
  return order;
}

uint32_t batch_words_for(const corpus& c, const train_options& o) {
  if (o.batch_words > 0)
    return o.batch_words;
  return static_cast<uint32_t>(std::clamp<size_t>(c.tokens.size() / 64, 1000, 20000));
}

namespace {

caf::error check_options(const train_options& o) {
  auto bad = [](const std::string& what) { return make_error(errc::invalid_argument, what); };
  if (o.dim == 0)
    return bad("--dim must be at least 1");
  if (o.window == 0)
    return bad("--window must be at least 1");
  if (o.epochs == 0)
    return bad("--epochs must be at least 1");
  if (o.threads == 0)
    return bad("--threads must be at least 1");
  if (auto err = runtime::check_at_most(
        "--threads", o.threads, runtime::max_threads(),
        "8 per core of this " + std::to_string(runtime::machine_cores()) + "-core machine"))
    return err;
  // An embedding row holds dim values and the optimizer's slots; more than 65536 is no word
  // vector, and the service refuses it.
  if (auto err = runtime::check_at_most("--dim", o.dim, 65536, "the embedding service's limit"))
    return err;
  if (!(o.alpha > 0))
    return bad("--alpha must be positive");
  if (o.sample < 0)
    return bad("--sample must not be negative");
  if (o.sampler == negative_source::service && o.service_pool == 0)
    return bad("--service-pool must be at least 1");
  if (o.store.starts_with(leveldb_store_prefix) && leveldb_store_dir(o.store).empty())
    return bad("--store leveldb:DIR needs a directory");
  return {};
}

// The input position of the checkpoint at `dir`, after restoring the model from it.
caf::expected<uint64_t> restore_position(ops::session& s, const std::string& dir, const corpus& c,
                                         const train_options& o) {
  auto state = ops::restore(s, dir);
  if (!state)
    return std::move(state.error());
  return decode_position(state->state.input_position, c, o);
}

// A shard that went down or stopped answering (its supervisor starts it again elsewhere).
bool shard_unreachable(const caf::error& err) {
  return is(err, errc::node_unreachable) || is(err, errc::timeout) ||
         err == caf::sec::request_timeout || err == caf::sec::request_receiver_down;
}

// Failures that a restore from the last checkpoint can repair: an unreachable shard, or a
// backward whose lookup handle a restarted shard no longer holds (the trainer sends each
// backward right after its lookup, so its handles never expire otherwise). Recoveries are
// bounded, so a failure that a restore cannot repair still ends the run.
bool lost_shard(const caf::error& err) {
  return shard_unreachable(err) || is(err, errc::not_found);
}

} // namespace

caf::expected<train_report> train(ops::session& s, const corpus& c, const train_options& o,
                                  const std::function<void(const progress&)>& on_progress) {
  if (auto err = check_options(o))
    return err;
  key_space keys{c, o.vocab_cap, o.min_count};
  if (keys.size() == 0)
    return make_error(errc::invalid_argument, "no word of the corpus occurs --min-count " +
                                                std::to_string(o.min_count) +
                                                " times: nothing to train");
  auto negatives = compute::candidate_distribution::make(sampler_kind::unigram, keys.counts);
  if (!negatives)
    return make_error(negatives.error());
  run_state rs{c, o, keys, {}, std::move(*negatives), {}, sentence_order(c, o), {}, 0};
  rs.batches = make_batches(c, rs.order, batch_words_for(c, o));
  rs.keep.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i)
    rs.keep[i] = compute::keep_probability(keys.counts[i], c.tokens.size(), o.sample);
  rs.words_total = static_cast<uint64_t>(c.tokens.size()) * o.epochs;
  for (uint32_t id = 0; id < keys.size(); ++id) {
    rs.hashes.push_back(compute::hash_key(keys.key_view(c, id)));
    if (o.sampler == negative_source::service)
      rs.id_of.emplace(keys.key_view(c, id), id);
  }
  rs.in_cfg = table_config(o, true);
  rs.out_cfg = table_config(o, false);

  uint64_t first = 0;
  if (!o.resume_from.empty()) {
    auto position = restore_position(s, o.resume_from, c, o);
    if (!position)
      return std::move(position.error());
    first = *position;
  }
  // Created before the first checkpoint, so that every checkpoint holds both tables.
  for (auto* cfg : {&rs.in_cfg, &rs.out_cfg})
    if (auto err = s.ensure_embedding(*cfg))
      return err;
  uint64_t total = rs.batches.size() * uint64_t{o.epochs};
  uint64_t end = total;
  bool stop_early =
    !o.checkpoint_to.empty() && o.stop_after_batches > 0 && o.stop_after_batches < total;
  if (stop_early)
    end = std::max(first, o.stop_after_batches);
  bool periodic = o.checkpoint_every > 0 && !o.periodic_dir.empty();

  auto words_before = [&](uint64_t position) {
    uint64_t words = 0;
    for (uint64_t b = 0; b < position; ++b)
      words += rs.batches[b % rs.batches.size()].words;
    return words;
  };
  std::atomic<uint64_t> next{first};
  std::atomic<uint64_t> pairs{0};
  std::atomic<uint64_t> words_done{words_before(first)};
  std::atomic<uint64_t> batches_done{first};
  std::mutex report_mutex;
  caf::error failure;
  std::atomic<bool> failed{false};
  uint64_t segment_end = end;
  auto begin = clock::now();
  auto work = [&] {
    worker w{keys.size()};
    for (auto b = next++; b < segment_end && !failed; b = next++) {
      auto& range = rs.batches[b % rs.batches.size()];
      auto done_before = (b / rs.batches.size()) * c.tokens.size() + range.word_offset;
      auto alpha = compute::decayed_alpha(o.alpha, done_before, rs.words_total);
      auto trained = run_batch(s, rs, w, b, alpha);
      std::lock_guard<std::mutex> guard{report_mutex};
      if (!trained) {
        if (!failed)
          failure = std::move(trained.error());
        failed = true;
        return;
      }
      pairs += *trained;
      words_done += range.words;
      ++batches_done;
      if (on_progress) {
        std::chrono::duration<double> elapsed = clock::now() - begin;
        on_progress({batches_done, total, words_done, rs.words_total, alpha, elapsed.count()});
      }
    }
  };
  // Trains batches [next, segment_end) on o.threads threads; false when one failed.
  auto run_segment = [&] {
    std::vector<std::thread> threads;
    try {
      for (uint32_t t = 1; t < o.threads; ++t)
        threads.emplace_back(work);
    } catch (const std::system_error& e) {
      // The system refused a thread: the ones started stop at their next batch.
      std::lock_guard<std::mutex> guard{report_mutex};
      failed = true;
      failure = make_error(errc::invalid_argument, "cannot start " + std::to_string(o.threads) +
                                                     " training threads: " + e.what());
    }
    work();
    for (auto& t : threads)
      t.join();
    return !failed;
  };

  train_report report;
  uint64_t position = first;
  auto checkpoint = [&](uint64_t at) -> caf::error {
    ops::training_state state{static_cast<int64_t>(at), encode_position(at, c, o), {}};
    ++report.checkpoints;
    return ops::save(s, o.periodic_dir, state);
  };
  if (periodic)
    if (auto err = checkpoint(position))
      return err;
  uint64_t checkpointed = position;
  while (position < end) {
    segment_end = periodic ? std::min(end, position + o.checkpoint_every) : end;
    next = position;
    caf::error err;
    if (run_segment()) {
      position = segment_end;
      if (!periodic || position >= end)
        continue;
      err = checkpoint(position);
      if (!err) {
        checkpointed = position;
        continue;
      }
    } else {
      err = failure;
    }
    if (!periodic || !lost_shard(err) || report.recoveries >= o.max_recoveries)
      return err;
    // A shard was lost: every shard goes back to the checkpoint, so that the replayed batches
    // see the model they saw the first time.
    ++report.recoveries;
    report.replayed_batches += batches_done - checkpointed;
    runtime::log_warn(
      "word2vec: {} (recovery {} of at most {}); restoring batch {} and "
      "replaying {} batches",
      render(err), report.recoveries, o.max_recoveries, checkpointed, batches_done - checkpointed);
    auto restored = restore_position(s, o.periodic_dir, c, o);
    // The lost shard comes back once its supervisor has placed it on another node.
    for (int attempt = 1; !restored && shard_unreachable(restored.error()) && attempt < 40;
         ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      restored = restore_position(s, o.periodic_dir, c, o);
    }
    if (!restored)
      return std::move(restored.error());
    position = *restored;
    batches_done = position;
    words_done = words_before(position);
    failed = false;
    failure = caf::error{};
  }

  std::chrono::duration<double> elapsed = clock::now() - begin;
  report.last = {batches_done,
                 total,
                 words_done,
                 rs.words_total,
                 compute::decayed_alpha(o.alpha, words_done, rs.words_total),
                 elapsed.count()};
  report.pairs = pairs;
  report.service_sampled_batches = rs.service_batches;
  report.local_sampled_batches = rs.local_batches;
  if (auto stats = ops::stats(s, o.name + ".in")) {
    report.retried_requests = stats->retried_requests;
    report.lost_shards = stats->recovered_shards;
  }
  if (stop_early) {
    ops::training_state state{static_cast<int64_t>(end), encode_position(end, c, o), {}};
    if (auto err = ops::save(s, o.checkpoint_to, state))
      return err;
    report.stopped_early = true;
  }
  return report;
}

caf::expected<word_vectors> export_vectors(ops::session& s, const corpus& c,
                                           const train_options& o) {
  key_space keys{c, o.vocab_cap, o.min_count};
  word_vectors result;
  for (uint32_t id = 0; id < keys.size(); ++id)
    result.words.push_back(keys.key(c, id));
  result.vectors.resize(static_cast<Eigen::Index>(keys.size()), o.dim);
  for (size_t begin = 0; begin < keys.size(); begin += max_request) {
    auto stop = std::min(keys.size(), begin + max_request);
    std::vector<std::string> chunk{result.words.begin() + static_cast<long>(begin),
                                   result.words.begin() + static_cast<long>(stop)};
    auto rows = ops::dynamic_embedding_lookup(s, std::move(chunk), table_config(o, true),
                                              o.name + ".in", false);
    if (!rows)
      return std::move(rows.error());
    result.vectors.middleRows(static_cast<Eigen::Index>(begin), rows->rows.rows()) = rows->rows;
  }
  return result;
}

de_config input_table_config(const train_options& opts) {
  return table_config(opts, true);
}

caf::expected<std::vector<std::pair<std::string, float>>> neighbours(ops::session& s,
                                                                     const de_config& table,
                                                                     std::span<const float> query,
                                                                     const std::string& word,
                                                                     uint32_t k) {
  if (query.size() != table.dim)
    return make_error(errc::dimension_mismatch, "a query of " + std::to_string(query.size()) +
                                                  " values for dim " + std::to_string(table.dim));
  ops::matrix q =
    Eigen::Map<const ops::matrix>(query.data(), 1, static_cast<Eigen::Index>(query.size()));
  auto hits = ops::top_k(s, q, k + 1, table, table.name, top_k_score::cosine);
  if (!hits)
    return std::move(hits.error());
  std::vector<std::pair<std::string, float>> result;
  for (size_t i = 0; i < hits->keys.size() && result.size() < k; ++i)
    if (hits->keys[i] != word)
      result.emplace_back(hits->keys[i], hits->scores[i]);
  return result;
}

} // namespace darcy::word2vec
