// `darcy word2vec train | eval | neighbors | experiment vocab-cap`: DE-Word2Vec, a
// dictionary-free skip-gram trained through the embedding service.
#include <array>
#include <memory>

#include "apps/cli/commands.hpp"
#include "apps/cli/export_index_options.hpp"
#include "apps/word2vec/export_job.hpp"
#include "apps/word2vec/word2vec_jobs.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using namespace darcy::word2vec;

void add_train_flags(CLI::App* cmd, word2vec::train_job& job) {
  auto& o = job.options;
  cmd->add_option("--corpus", job.corpus, "Corpus file or directory")->required();
  cmd
    ->add_option("--format", job.format,
                 "Corpus format (brown: tagged; tags stripped, lower-cased)")
    ->check(CLI::IsMember({"text", "brown"}));
  cmd->add_option("--dim", o.dim, "Vector size");
  cmd->add_option("--window", o.window, "Largest context window");
  cmd->add_option("--negative", o.negative, "Negative samples per pair");
  add_choice<negative_source>(
    cmd, "--sampler", o.sampler,
    {{"local", negative_source::local}, {"service", negative_source::service}},
    "Negatives from the corpus's counts here (local) or from the "
    "embedding service's candidate sampler (service)");
  cmd->add_option("--service-pool", o.service_pool,
                  "--sampler service: keys the service draws per batch");
  cmd->add_option("--sample", o.sample, "Subsampling threshold for frequent words (0: off)");
  cmd->add_option("--epochs", o.epochs, "Passes over the corpus");
  cmd->add_option("--threads", o.threads, "Training threads");
  cmd->add_option("--alpha", o.alpha, "Starting learning rate");
  cmd->add_option("--min-count", o.min_count,
                  "Drop words seen fewer than N times in the corpus (0: keep all)");
  cmd->add_option("--seed", o.seed, "Random seed");
  cmd->add_option("--batch-words", o.batch_words,
                  "Words per lookup/update batch (0: the corpus's words / 64, from 1000 to 20000)");
  cmd->add_flag("--in-order", o.in_order,
                "Train sentences in corpus order (default: an order shuffled by --seed)");
  cmd->add_option("--name", o.name, "Embedding name prefix in the service");
  cmd->add_option(
    "--store", o.store,
    "Where the rows live: each shard's memory (default), leveldb:DIR (LevelDB databases "
    "under DIR, which keep an earlier run's rows), or redis://HOST:PORT/PREFIX, one "
    "Redis that every shard shares");
  cmd->add_option("--store-staleness-ms", o.store_staleness_ms,
                  "With --store redis://...: how far a shard's cached row may lag Redis");
  cmd->add_option("--cluster", job.where.cluster,
                  "Seed HOST:PORT, or a cluster file or directory (default: in-process)");
  cmd->add_option("--shards", job.where.shards, "Shards in process, or per cluster node");
  cmd->add_option("--timeout-ms", job.where.timeout_ms, "Service request timeout");
  cmd
    ->add_option("--shard-retry-ms", job.where.shard_retry_ms,
                 "Send a shard request again when unanswered this long (doubling each time)")
    ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
  cmd->add_flag("--quiet", job.quiet, "No progress bar");
}

void add_eval_files(CLI::App* cmd, std::string& analogies, std::vector<std::string>& similarity) {
  cmd->add_option("--analogies", analogies, "Analogy questions (questions-words.txt)");
  cmd->add_option("--similarity", similarity, "Similarity pairs (WordSim-353, SimLex-999)");
}

} // namespace

void add_word2vec_command(CLI::App& app, int& exit_code) {
  auto w2v = app.add_subcommand("word2vec", "Dictionary-free skip-gram on the embedding service");
  w2v->require_subcommand(1);
  auto report = [&exit_code](caf::error err) { exit_code = err ? fail(render(err)) : 0; };

  auto job = std::make_shared<word2vec::train_job>();
  auto train = w2v->add_subcommand("train", "Train word vectors");
  add_train_flags(train, *job);
  train->add_option("--output", job->output, "Write vectors to this file");
  train->add_flag("--binary", job->binary, "Write word2vec's binary format (default: text)");
  train->add_option("--checkpoint", job->checkpoint, "Save the trained model here");
  train->add_option("--resume", job->options.resume_from, "Resume from a stopped run's checkpoint");
  train->add_option("--stop-after-batches", job->options.stop_after_batches,
                    "Stop after this many batches and save to --stop-checkpoint");
  train->add_option("--stop-checkpoint", job->options.checkpoint_to,
                    "Where a stopped run saves its checkpoint");
  train->add_option("--checkpoint-every", job->checkpoint_every,
                    "Consistent checkpoint every N batches, to recover a lost shard from (-1: " +
                      std::to_string(word2vec::default_checkpoint_every) +
                      " on a cluster, none in process; 0: none)");
  train->add_option("--periodic-checkpoint", job->periodic_checkpoint,
                    "Where periodic checkpoints go; every node must reach it (default: a "
                    "temporary directory, removed after success)");
  train->add_option("--neighbours", job->show_neighbours, "Print neighbours of these words");
  add_eval_files(train, job->analogies, job->similarity);
  train->callback([job, report] { report(run_train(*job)); });

  auto eval = std::make_shared<word2vec::eval_job>();
  auto eval_cmd = w2v->add_subcommand("eval", "Score a vectors file");
  eval_cmd->add_option("--vectors", eval->vectors, "word2vec text or binary file")->required();
  add_eval_files(eval_cmd, eval->analogies, eval->similarity);
  eval_cmd->add_option("--analogy-vocab", eval->analogy_vocab,
                       "Analogies use the most frequent N words");
  eval_cmd->add_flag("--json", eval->json, "Also print one JSON line");
  eval_cmd->callback([eval, report] { report(run_eval(*eval)); });

  auto near = std::make_shared<word2vec::neighbours_job>();
  auto near_cmd = w2v->add_subcommand("neighbors", "Nearest words by cosine, through top_k");
  near_cmd->alias("neighbours");
  near_cmd->add_option("word", near->word, "The word")->required();
  near_cmd->add_option("-k", near->k, "How many");
  near_cmd->add_option("--checkpoint", near->checkpoint, "A checkpoint from train --checkpoint");
  near_cmd->add_option("--vectors", near->vectors, "A vectors file");
  near_cmd->add_option("--name", near->name, "Embedding name prefix");
  near_cmd->callback([near, report] { report(run_neighbours(*near)); });

  auto exp = std::make_shared<word2vec::export_job>();
  auto exp_cmd = w2v->add_subcommand(
    "export", "Write word vectors as a new version of a serving export (cosine neighbours)");
  exp_cmd->add_option("--checkpoint", exp->checkpoint, "A checkpoint from train --checkpoint");
  exp_cmd->add_option("--vectors", exp->vectors, "A vectors file from train --output");
  exp_cmd->add_option("--name", exp->name, "Embedding name prefix in the checkpoint");
  exp_cmd->add_option("--out", exp->out, "Export directory EXPORTS/<name>")->required();
  exp_cmd->add_option("--shards", exp->shards, "Shard sub-models")->check(CLI::Range(1, 1024));
  exp_cmd->add_option("--keep", exp->keep, "Versions kept, the new one included")
    ->check(CLI::Range(1, 1000));
  exp_cmd->add_option("--lists", exp->index.lists, "Inverted lists per shard (0: 2 sqrt(words))");
  add_export_index_options(exp_cmd, exp->kind, exp->graph);
  exp_cmd->add_option("--threads", exp->index.threads, "Threads building the indexes")
    ->check(CLI::Range(1, 256));
  exp_cmd->callback([exp, report] { report(word2vec::run_export(*exp)); });

  auto prep = std::make_shared<std::array<std::string, 3>>();
  (*prep)[1] = "text";
  auto prep_cmd = w2v->add_subcommand(
    "prepare", "Write a corpus as plain text, a sentence per line (the input peers get)");
  prep_cmd->add_option("--corpus", (*prep)[0], "Corpus file or directory")->required();
  prep_cmd->add_option("--format", (*prep)[1], "text or brown");
  prep_cmd->add_option("--out", (*prep)[2], "Output file")->required();
  prep_cmd->callback(
    [prep, report] { report(write_plain_corpus((*prep)[0], (*prep)[1], (*prep)[2])); });

  auto experiment = w2v->add_subcommand("experiment", "Experiments");
  experiment->require_subcommand(1);
  auto cap = std::make_shared<word2vec::vocab_cap_job>();
  auto eval_dir = std::make_shared<std::string>("../shared/data/eval");
  auto cap_cmd = experiment->add_subcommand(
    "vocab-cap", "Quality versus a capped vocabulary (the seed's Fig. 4a)");
  add_train_flags(cap_cmd, cap->train);
  add_eval_files(cap_cmd, cap->train.analogies, cap->train.similarity);
  cap_cmd->add_option("--eval-dir", *eval_dir, "Directory with the standard evaluation files");
  cap_cmd->add_option("--caps", cap->caps, "Vocabulary caps (0: unlimited)")->delimiter(',');
  cap_cmd->add_option("--out", cap->out_dir, "Directory for the table and the PNG plot");
  cap_cmd->callback([cap, eval_dir, report] {
    auto job = *cap;
    if (job.train.analogies.empty() && job.train.similarity.empty())
      word2vec::default_eval_files(*eval_dir, job.train.analogies, job.train.similarity);
    report(run_vocab_cap(job));
  });
}

} // namespace darcy::apps
