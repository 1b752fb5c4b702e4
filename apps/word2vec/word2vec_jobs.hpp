// The word2vec jobs behind `darcy word2vec ...` and `darcy demo`: train with a progress bar,
// evaluate, print neighbours, and the vocabulary-cap experiment. Each prints its results and
// returns the first error; the CLI prints it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "apps/word2vec/corpus.hpp"
#include "apps/word2vec/trainer.hpp"

namespace darcy::word2vec {

struct session_choice {
  /// Empty: an in-process cluster. Otherwise the seed's HOST:PORT.
  std::string cluster;
  /// Shards in process, or per member node.
  size_t shards = 2;
  int64_t timeout_ms = 10000;
  /// A shard request unanswered this long is sent again (the embedding master's attempt timeout).
  int64_t shard_retry_ms = 2000;
  /// Cluster only: shards under supervision, refilled from this directory when restarted.
  bool supervise = false;
  std::string shard_checkpoint_dir;
};

struct train_job {
  std::string corpus;
  std::string format = "text";
  train_options options;
  session_choice where;
  /// Vectors file to write (empty: none), binary or text.
  std::string output;
  bool binary = false;
  /// Checkpoint of the trained model (neighbours search its input table): empty for none.
  std::string checkpoint;
  bool quiet = false;
  /// Words to print neighbours of after training.
  std::vector<std::string> show_neighbours;
  /// Evaluation files to score after training (empty: none).
  std::string analogies;
  std::vector<std::string> similarity;
  /// Periodic checkpoints every this many batches; -1: every default_checkpoint_every on a
  /// cluster (where shards are supervised and a lost one is recovered), none in process.
  int64_t checkpoint_every = -1;
  /// Where periodic checkpoints go (every node must reach it); empty: a directory under the
  /// system's temp directory, removed when the run succeeds.
  std::string periodic_checkpoint;
};

inline constexpr uint64_t default_checkpoint_every = 25;

caf::error run_train(const train_job& job);

struct eval_job {
  std::string vectors;
  std::string analogies;
  std::vector<std::string> similarity;
  size_t analogy_vocab = 30000;
  bool json = false;
};

caf::error run_eval(const eval_job& job);

struct neighbours_job {
  std::string word;
  uint32_t k = 10;
  /// Exactly one of these: a checkpoint written by `train --checkpoint`, or a vectors file.
  std::string checkpoint;
  std::string vectors;
  std::string name = "w2v";
};

caf::error run_neighbours(const neighbours_job& job);

struct vocab_cap_job {
  train_job train;
  /// 0 stands for unlimited.
  std::vector<size_t> caps{2000, 5000, 10000, 20000, 0};
  std::string out_dir = "vocab-cap";
};

caf::error run_vocab_cap(const vocab_cap_job& job);

/// Writes the corpus at `path` as read (tags stripped, lower-cased for brown) to `out`, one
/// sentence per line and tokens separated by one space, so peers train on the same words.
caf::error write_plain_corpus(const std::string& path, const std::string& format,
                              const std::string& out);

/// Sets `analogies` and `similarity` to the standard files under `dir` that exist
/// (questions-words.txt, wordsim353.tsv, simlex999.txt); leaves them alone otherwise.
void default_eval_files(const std::string& dir, std::string& analogies,
                        std::vector<std::string>& similarity);

} // namespace darcy::word2vec
