// `darcy demo`, the main job of `make demo`: DE-Word2Vec on the Brown corpus in an in-process
// cluster, with neighbours, its score on the word-similarity set the repository carries (and on
// larger evaluation sets when present) and a checkpoint. `darcy demo --supervision` shows a
// supervised service restarting instead.
#include <filesystem>
#include <iostream>

#include <caf/scoped_actor.hpp>

#include "actors/cluster/echo_service.hpp"
#include "apps/cli/commands.hpp"
#include "apps/cli/status_table.hpp"
#include "apps/word2vec/word2vec_jobs.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/chaos.hpp"

namespace darcy::apps {

namespace {

// Waits for the next supervisor event of `kind` for `child`.
caf::error await_event(caf::scoped_actor& self, supervisor_event_kind kind,
                       const std::string& child) {
  caf::error result = make_error(errc::timeout, "waiting for " + to_string(kind));
  bool done = false;
  while (!done) {
    self->receive(
      [&](const supervisor_event& e) {
        if (e.kind == kind && e.child == child) {
          result = caf::error{};
          done = true;
        } else if (e.kind == supervisor_event_kind::gave_up) {
          result = make_error(errc::restart_intensity_exceeded, e.reason);
          done = true;
        }
      },
      caf::after(std::chrono::seconds(10)) >> [&] { done = true; });
  }
  return result;
}

int run_supervision_demo() {
  auto session = ops::session::open({});
  if (!session)
    return fail(render(session.error()));
  auto& s = **session;
  caf::scoped_actor self{s.system()};

  supervisor_spec spec;
  spec.name = "demo";
  spec.children.push_back(
    {"echo", actors::echo_service_name, {}, {}, restart_type::permanent, "echo"});
  auto sup = s.supervise(spec);
  self->send(sup, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  if (auto err = await_event(self, supervisor_event_kind::child_started, "echo"))
    return fail(render(err));

  auto call_echo = [&](const std::string& text) -> caf::error {
    auto info = s.lookup("echo");
    if (!info)
      return info.error();
    caf::error result;
    self->request(caf::actor_cast<echo_actor>(info->actor), s.timeout(), echo_atom::value, text)
      .receive(
        [&](const std::string& node, const std::string& payload) {
          std::cout << "echo from node " << node << ": " << payload << std::endl;
        },
        [&](caf::error& err) { result = std::move(err); });
    return result;
  };
  if (auto err = call_echo("hello, cluster"))
    return fail(render(err));

  std::cout << "killing the echo service to show supervision..." << std::endl;
  if (auto err = runtime::kill_service(s.system(), s.registry(), "echo", s.timeout()))
    return fail(render(err));
  if (auto err = await_event(self, supervisor_event_kind::child_restarted, "echo"))
    return fail(render(err));
  if (auto err = call_echo("hello again, after a restart"))
    return fail(render(err));

  auto status = s.status();
  if (!status)
    return fail(render(status.error()));
  print_status(std::cout, *status);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  return 0;
}

struct demo_options {
  std::string corpus = "build/data/brown";
  /// The word-similarity set the repository carries, scored after every demo.
  std::string similarity = "apps/word2vec/data/brown-relatedness.tsv";
  /// Larger evaluation sets (WordSim-353, SimLex-999, the analogies), scored when present.
  std::string eval_dir = "../shared/data/eval";
  std::string checkpoint = "build/demo-checkpoint";
  /// The rows' LevelDB databases, emptied at the start of each demo.
  std::string store = "build/demo-store";
  bool supervision = false;
};

int run_word2vec_demo(const demo_options& o) {
  word2vec::train_job job;
  job.corpus = o.corpus;
  job.format = "brown";
  job.checkpoint = o.checkpoint;
  job.options.store = std::string{word2vec::leveldb_store_prefix} + o.store;
  std::error_code ec;
  std::filesystem::remove_all(o.store, ec);
  if (ec)
    return fail("cannot empty the demo's store " + o.store + ": " + ec.message());
  job.show_neighbours = {"man", "money", "city", "war", "good"};
  if (!o.similarity.empty()) {
    if (!std::filesystem::exists(o.similarity))
      return fail("demo: --similarity: no file " + o.similarity +
                  " (run the demo from the repository's root, or give the file)");
    job.similarity.push_back(o.similarity);
  }
  word2vec::default_eval_files(o.eval_dir, job.analogies, job.similarity);
  std::cout
    << "DE-Word2Vec on the Brown corpus: skip-gram, dim 100, window 5, 5 negatives, "
       "5 epochs, 2 threads, rows in an in-process embedding service (2 shards) on LevelDB in "
    << o.store << std::endl;
  if (auto err = word2vec::run_train(job))
    return fail(render(err));
  return 0;
}

} // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<demo_options>();
  auto demo =
    app.add_subcommand("demo", "Run the main job on embedded defaults (in-process cluster)");
  demo->add_option("--corpus", opts->corpus, "Brown corpus directory (scripts/fetch_brown.sh)");
  demo->add_option("--similarity", opts->similarity,
                   "A word-similarity set to score (word1 TAB word2 TAB score; empty: none)");
  demo->add_option("--eval-dir", opts->eval_dir,
                   "More evaluation files (questions-words.txt, wordsim353.tsv, simlex999.txt), "
                   "scored when present");
  demo->add_option("--checkpoint", opts->checkpoint, "Where the trained model is saved");
  demo->add_option("--store", opts->store, "The rows' LevelDB databases (emptied first)");
  demo->add_flag("--supervision", opts->supervision, "Show a supervised restart instead");
  demo->callback([opts, &exit_code] {
    exit_code = opts->supervision ? run_supervision_demo() : run_word2vec_demo(*opts);
  });
}

} // namespace darcy::apps
