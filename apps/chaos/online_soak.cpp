#include "apps/chaos/online_soak.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <signal.h>

#include "apps/chaos/online_watch.hpp"
#include "messages/error.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr uint64_t window_rows = 2000;
/// How long the first window (and its export) may take.
constexpr auto first_window_patience = 120s;

std::vector<std::string> trainer_argv(const soak_options& o, const std::string& binary,
                                      const std::string& dir, uint16_t port) {
  std::vector<std::string> argv{binary,
                                "estimator",
                                "ctr",
                                "--stream",
                                "generate",
                                "--window",
                                std::to_string(window_rows),
                                "--stream-rows",
                                std::to_string(o.stream_rows),
                                "--max-ids",
                                std::to_string(online_max_ids),
                                "--threads",
                                "1",
                                "--seed",
                                std::to_string(o.seed)};
  for (auto& flag : online_sync_flags(dir, port))
    argv.push_back(flag);
  return argv;
}

/// The training process of one run, SIGKILLed at `kills_s` and started again at once.
struct one_process {
  std::vector<std::string> argv;
  std::string sync_dir;
  std::vector<double> kills_s;
  std::optional<runtime::child_process> trainer;
  /// The stderr of the training processes killed before this one.
  std::string earlier;

  void drain(online_run& run) {
    trainer->wait_for_line("\x01", 1ms); // its window lines
    auto err = trainer->read_stderr();   // all of it so far
    std::lock_guard<std::mutex> guard{run.mutex};
    run.training_log = last_chars(earlier + err, 20000);
  }

  caf::error start(online_run&) {
    auto t = runtime::child_process::start(argv);
    if (!t)
      return std::move(t.error());
    trainer.emplace(std::move(*t));
    // Its first window's line comes after the export that serving starts from.
    if (auto line = trainer->wait_for_line("\"window\"", first_window_patience); !line)
      return make_error(errc::io_error, "soak: the first window did not end: " +
                                          last_chars(trainer->read_stderr()));
    return {};
  }

  void drive(online_run& run) {
    size_t next_kill = 0;
    while (!run.stop) {
      record_sync(sync_dir, run);
      drain(run);
      if (auto code = trainer->wait(0ms)) {
        drain(run);
        if (*code != 0)
          return run.fail("the training process exited " + std::to_string(*code) + ": " +
                          last_chars(run.training_log));
        run.training_ended = steady::now();
        return;
      }
      if (next_kill < kills_s.size() &&
          std::chrono::duration<double>(steady::now() - run.serving_began).count() >=
            kills_s[next_kill]) {
        ++next_kill;
        trainer->signal(SIGKILL);
        trainer->wait(30s);
        drain(run);
        {
          std::lock_guard<std::mutex> guard{run.mutex};
          run.training_kills.push_back(steady::now());
          earlier = run.training_log + "[soak: the training process was SIGKILLed]\n";
        }
        auto again = runtime::child_process::start(argv);
        if (!again)
          return run.fail("the training process did not start again: " + to_string(again.error()));
        trainer.emplace(std::move(*again));
        continue;
      }
      std::this_thread::sleep_for(online_poll);
    }
  }

  void stop() {
    if (!trainer)
      return;
    trainer->signal(SIGKILL);
    trainer->wait(30s);
  }
};

} // namespace

caf::expected<soak_result> run_online_soak(const soak_options& o, const std::string& binary) {
  return run_online_soaks(
    o, binary, [&](const std::string& dir, uint16_t port, const std::vector<double>& kills_s) {
      auto p = std::make_shared<one_process>();
      p->argv = trainer_argv(o, binary, dir, port);
      p->sync_dir = dir + "/sync";
      p->kills_s = kills_s;
      return online_job{[p](online_run& run) { return p->start(run); },
                        [p](online_run& run) { p->drive(run); },
                        [p] { p->stop(); },
                        p->sync_dir,
                        {"--embedding-shards", "2", "--http-threads", "2", "--threads", "2"}};
    });
}

} // namespace darcy::apps
