// The processes of an Estimator job that a soak runs itself: a chief (the seed of the job's
// cluster, on a free port), its parameter servers and workers, and optionally an evaluator, each
// `darcy estimator APP --task-type ...` with the one cluster spec. The soak kills and starts
// again the ps and worker tasks, or the whole job after its chief.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "runtime/process/process.hpp"

namespace darcy::apps {

struct roles_options {
  /// What follows `darcy estimator`: the app and its flags.
  std::vector<std::string> app;
  /// Flags every role gets after the soak's own.
  std::vector<std::string> flags;
  uint64_t max_steps = 0;
  uint64_t checkpoint_steps = 100;
  size_t workers = 2;
  size_t parameter_servers = 1;
  bool evaluator = true;
};

class roles_run {
public:
  /// The job's model folder, node configuration (chaos gates on, heartbeats every 200 ms, a
  /// member down after 2 s) and the logs of its tasks go under `dir`.
  roles_run(roles_options o, std::string binary, std::string dir);

  /// Starts the chief, waits until it listens, then the ps, the workers and the evaluator. A
  /// second call starts the job anew (its chief on a new port); the processes of the first
  /// must be gone.
  caf::error start();

  /// Starts the process of task `name` ("worker-I" or "ps-I").
  caf::error start(const std::string& name);

  /// SIGKILLs task `name`; its process is gone until start(name).
  void kill(const std::string& name);

  /// SIGKILLs the chief, then waits up to `patience` for the ps and workers to end by
  /// themselves (as they do once their chief is gone) and SIGKILLs those still running.
  /// Answers the tasks that had to be killed.
  std::vector<std::string> kill_job(std::chrono::milliseconds patience);

  /// The ps and worker tasks whose process runs: the workers in order, then the ps.
  std::vector<std::string> running() const;

  size_t workers() const { return o_.workers; }
  const std::string& chief_address() const { return chief_address_; }
  runtime::child_process& chief() { return *chief_; }
  /// What the running chief wrote to stderr so far.
  std::string chief_messages() { return chief_->read_stderr(); }
  std::optional<runtime::child_process>& evaluator() { return evaluator_; }

  /// Reads every process's stderr, so that none blocks on a full pipe.
  void drain();

  /// What the processes wrote to stderr (drained first), the tasks' earlier processes
  /// included, under a heading per task: about the last `n` characters in all.
  std::string messages(size_t n = 20000);

private:
  std::vector<std::string> argv(const std::string& type, size_t index) const;

  /// A task and its process while it runs.
  struct task {
    std::string type;
    size_t index = 0;
    std::optional<runtime::child_process> process;
    /// The stderr of its processes that ended.
    std::string earlier;
    std::string name() const { return type + "-" + std::to_string(index); }
  };

  task& find(const std::string& name);
  /// Moves the stderr of t's process into t.earlier, and forgets the process.
  static void bury(task& t);

  roles_options o_;
  std::string binary_;
  std::string dir_;
  std::string chief_address_;
  std::optional<runtime::child_process> chief_, evaluator_;
  std::string chief_earlier_;
  std::vector<task> killable_;
};

} // namespace darcy::apps
