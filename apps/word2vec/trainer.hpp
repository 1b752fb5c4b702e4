// DE-Word2Vec: skip-gram with negative sampling whose rows live in the embedding service. Each
// thread takes a batch of sentences, looks its rows up once, trains them locally with
// word2vec.c's rule and sends the change back through the service's optimizer.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "apps/word2vec/corpus.hpp"
#include "apps/word2vec/vectors_io.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "ops/session.hpp"

namespace darcy::word2vec {

/// Where a batch's negatives come from.
enum class negative_source : uint8_t {
  /// Drawn in the trainer from the corpus's unigram counts^0.75, as word2vec.c draws them.
  local = 0,
  /// Drawn by the embedding service's candidate sampler (the DynamicEmbedding paper's path):
  /// per batch, service_pool keys by the input table's row frequencies^0.75 (each lookup
  /// counts the word's occurrences in the batch's sentences), from which each pair takes its
  /// negatives.
  service = 1,
};

struct train_options {
  uint32_t dim = 100;
  uint32_t window = 5;
  uint32_t negative = 5;
  negative_source sampler = negative_source::local;
  /// With the service's sampler: keys drawn per batch (at most negative per pair).
  uint32_t service_pool = 32768;
  double sample = 1e-3;
  uint32_t epochs = 5;
  uint32_t threads = 2;
  float alpha = 0.025f;
  uint64_t seed = 1;
  /// 0 or 1: every word gets a row. Otherwise words seen fewer than min_count times in the
  /// corpus are dropped from the sentences (as word2vec.c drops them) and never reach the
  /// service, so the vectors, neighbours and evaluation hold admitted words only.
  uint32_t min_count = 0;
  /// 0: unlimited. Otherwise only the vocab_cap most frequent words keep their own key; the
  /// others share oov_key.
  size_t vocab_cap = 0;
  /// Tokens per batch: the unit of lookup, update, learning-rate decay and resumption. 0: sized
  /// to the corpus (batch_words_for). Concurrent batches train on rows that miss each other's
  /// updates, so a batch must stay small against the corpus.
  uint32_t batch_words = 0;
  /// Train the sentences in corpus order instead of an order shuffled by the seed.
  bool in_order = false;
  /// Embedding names in the service: input vectors, output (context) vectors.
  std::string name = "w2v";
  /// Where the rows live: empty for each shard's memory; leveldb:DIR for LevelDB databases
  /// under DIR (DIR/<table>/shard-<i>, stores/embedding/leveldb_store.hpp), which keep the rows an
  /// earlier run left there; or redis://HOST:PORT/PREFIX for one Redis that every shard shares
  /// (stores/embedding/redis_store.hpp), cached within store_staleness_ms.
  std::string store;
  uint32_t store_staleness_ms = 1000;
  /// Resume from this checkpoint (empty: start fresh).
  std::string resume_from;
  /// With checkpoint_to set, stop after this many batches of the whole run and save there.
  uint64_t stop_after_batches = 0;
  std::string checkpoint_to;
  /// With periodic_dir set: a consistent checkpoint there at the start and after every this
  /// many batches (0: none). When a batch fails because a shard was lost (its node died or
  /// timed out), the whole model is restored from the newest one and training replays from
  /// its position, at most max_recoveries times.
  uint64_t checkpoint_every = 0;
  std::string periodic_dir;
  uint32_t max_recoveries = 10;
};

inline const std::string oov_key = "oov";

/// Where training stands; also what a checkpoint records as the input position.
struct progress {
  uint64_t batches_done = 0;
  uint64_t batches_total = 0;
  uint64_t words_done = 0;
  uint64_t words_total = 0;
  float alpha = 0;
  double seconds = 0;
};

struct train_report {
  progress last;
  uint64_t pairs = 0;
  /// True when the run stopped at stop_after_batches and saved a checkpoint.
  bool stopped_early = false;
  /// Restores from the periodic checkpoint after a lost shard, and the batches trained again
  /// because of them (work lost and replayed).
  uint32_t recoveries = 0;
  uint64_t replayed_batches = 0;
  /// Shards the service replaced after their node was lost. A shard lost before any update
  /// since the last checkpoint is refilled with nothing to replay, so it costs no recovery.
  uint64_t lost_shards = 0;
  uint64_t checkpoints = 0;
  /// Shard requests sent again after a timeout (messages lost on the way), service-wide.
  uint64_t retried_requests = 0;
  /// With the service's sampler: batches whose negatives came from it, and batches that drew
  /// them locally because the service held no candidate yet (the first batches).
  uint64_t service_sampled_batches = 0;
  uint64_t local_sampled_batches = 0;
};

/// The indices of c's sentences in the order a run trains them, every epoch: shuffled by
/// opts.seed (a batch then mixes distant parts of the corpus, so that consecutive updates do
/// not all come from one document), or corpus order with opts.in_order.
std::vector<uint32_t> sentence_order(const corpus& c, const train_options& opts);

/// The batch size a run uses: opts.batch_words, or when that is 0 the corpus's tokens / 64,
/// clamped to [1000, 20000].
uint32_t batch_words_for(const corpus& c, const train_options& opts);

/// Fails with errc::invalid_argument for a zero dim, window, epoch or thread count, or the
/// service's error. `on_progress` is called from training threads, at most one at a time.
caf::expected<train_report> train(ops::session& s, const corpus& c, const train_options& opts,
                                  const std::function<void(const progress&)>& on_progress = {});

/// The trained input vectors of every word key (most frequent first, oov_key included when
/// it was used), read back from the service.
caf::expected<word_vectors> export_vectors(ops::session& s, const corpus& c,
                                           const train_options& opts);

inline constexpr std::string_view leveldb_store_prefix = "leveldb:";

/// DIR of a `store` that reads leveldb:DIR; empty for any other store.
inline std::string leveldb_store_dir(const std::string& store) {
  return store.starts_with(leveldb_store_prefix) ? store.substr(leveldb_store_prefix.size())
                                                 : std::string{};
}

/// The input table `<name>.in`, whose rows are the word vectors.
de_config input_table_config(const train_options& opts);

/// The k words nearest to `query` by cosine among the rows of `table` (each shard normalises
/// its rows on the fly), leaving `word` itself out.
caf::expected<std::vector<std::pair<std::string, float>>> neighbours(ops::session& s,
                                                                     const de_config& table,
                                                                     std::span<const float> query,
                                                                     const std::string& word,
                                                                     uint32_t k);

} // namespace darcy::word2vec
