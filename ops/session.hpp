// A model author's handle on a cluster: either an in-process cluster (one seed node inside this
// process, no network listener) or a running cluster reached through its seed's address. The
// calls are the same either way.
//
//   auto local = ops::session::open({});                                   // in process
//   auto remote = ops::session::open({runtime::host_port{"127.0.0.1", 7000}}); // a cluster
//   auto master = (*remote)->embeddings();     // shards start on every member on first use
//   auto members = (*remote)->status();
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "runtime/host_port.hpp"
#include "runtime/node_services.hpp"
#include "runtime/system_config.hpp"

namespace darcy::actors {
class direct_embedding;
class shard_client;
} // namespace darcy::actors

namespace darcy::ops {

struct session_options {
  /// Empty: start an in-process cluster. Otherwise: join nothing, just talk to this seed.
  std::optional<runtime::host_port> seed;
  std::string name = "local";
  std::chrono::milliseconds timeout{5000};
  size_t threads = 0;
  /// Shards of the embedding service the session starts on first use: this many in this
  /// process, or this many on each member node of a cluster.
  size_t shards = 2;
  /// On a cluster: put the shards under a supervisor in this process, so that a shard whose
  /// node dies is started again elsewhere and refilled from `shard_checkpoint_dir` (which every
  /// node must be able to read: one host, or a shared file system).
  bool supervise_shards = false;
  /// A shard request unanswered this long is sent again, waiting twice as long each time (see
  /// embedding_master_options::attempt_timeout).
  std::chrono::milliseconds shard_retry{2000};
  /// Sends of a shard request in all, the first included (embedding_master_options::attempts).
  uint32_t shard_attempts = 4;
  std::string shard_checkpoint_dir;
  /// Every table created, restored or synced into the service lives in its shards' memory,
  /// whatever backend its config or the checkpoint names
  /// (embedding_master_options::tables_in_memory): serving copies, and an evaluator, whose
  /// tables must not open the databases a ps holds.
  bool tables_in_memory = false;
  /// Called on the session's config before its actor system starts: an app adds its own
  /// message and actor types here (the same hook its nodes run).
  std::function<void(runtime::system_config&)> configure;
  /// On a cluster: the members that hold the shards; empty: every member.
  std::vector<std::string> shard_nodes;
  /// On a cluster: use the embedding service another session published under this name
  /// (publish_embeddings) instead of starting one.
  std::string embedding_service;
  /// On a cluster whose service has fixed shards (not supervise_shards): lookups and backward
  /// passes go from this session straight to the shards, one hop each way instead of two
  /// through the master (see shard_client()), and a backward returns once its pass is sent
  /// (ops::flush waits for the shards). For asynchronous data-parallel trainers: a save of the
  /// service no longer holds their requests back, so a checkpoint taken meanwhile may hold one
  /// backward on some shards and not yet on others, as an asynchronous parameter-server
  /// checkpoint holds some workers' steps on some servers only.
  bool direct_shards = false;
};

class session {
public:
  /// Fails with errc::node_unreachable when `opts.seed` does not answer.
  static caf::expected<std::unique_ptr<session>> open(session_options opts);

  /// A session on `sys`, the actor system of a running cluster member (a role's node), which
  /// it does not own and which must outlive it; opts.seed, name, threads and configure are
  /// unused. errc::node_unreachable when `sys` knows no registry.
  static caf::expected<std::unique_ptr<session>> attach(caf::actor_system& sys,
                                                        session_options opts);

  ~session();

  caf::actor_system& system() { return *system_; }
  /// True for an in-process cluster, false on a cluster (a seed's, or an attached system's).
  bool in_process() const { return !cluster_; }
  const registry_actor& registry() const { return registry_; }
  std::chrono::milliseconds timeout() const { return opts_.timeout; }
  /// On a cluster, the members that hold the shards (empty: every member).
  const std::vector<std::string>& shard_nodes() const { return opts_.shard_nodes; }

  caf::expected<cluster_status> status();

  /// Resolves `service` through the registry; errc::unknown_service when absent.
  caf::expected<service_info> lookup(const std::string& service);

  /// Spawns a supervisor in this process.
  supervisor_actor supervise(supervisor_spec spec);

  /// The embedding service, started on first use: its master runs in this process, its shards
  /// here (in-process) or on every member node (cluster). Safe to call from many threads.
  caf::expected<embedding_master_actor> embeddings();

  /// The candidate sampler over the same shards as embeddings().
  caf::expected<candidate_sampler_actor> sampler();

  /// The direct path into the embedding service (lookups and updates in the caller's thread)
  /// when all its shards live in this process, as in an in-process session; nullptr on a
  /// cluster. Starts the service on first use, as embeddings() does.
  const actors::direct_embedding* direct_embeddings();

  /// The path straight to the shards (opts.direct_shards) for the embeddings this session has
  /// ensured; nullptr when the option is off, for an in-process session, before the first
  /// ensure_embedding, or when the master refused it (supervised shards: requests then go
  /// through the master).
  std::shared_ptr<const actors::shard_client> shard_client();

  /// Held shared by every direct update and alone by save and restore, so that a checkpoint
  /// never holds part of a direct update.
  std::shared_mutex& direct_gate() { return direct_gate_; }

  /// Starts the embedding service (as embeddings()) and registers its master as `service` and
  /// its sampler as `service`.sampler on node `node` (this session's member name), for
  /// sessions with that embedding_service. errc::invalid_config for an in-process session.
  caf::error publish_embeddings(const std::string& service, const std::string& node);

  /// Creates embedding `cfg.name` once per session (later calls with the same name return at
  /// once). Fails like the master's create: errc::invalid_config, or a dim clash. With
  /// direct_shards, the new embedding replaces the shard client; the failure of a backward
  /// pass the old one had sent is returned here, once, after the embedding was created.
  caf::error ensure_embedding(const de_config& cfg);

  /// The embeddings this session created (ensure_embedding) or restored.
  std::set<std::string> embedding_names();

  /// After a restore, the service holds exactly the embeddings `names`: later ensure_embedding
  /// calls create any other embedding again.
  void embeddings_restored(std::set<std::string> names);

private:
  explicit session(session_options opts);

  session_options opts_;
  /// Creates the session's own actor system (open, not attach).
  void start_system();
  /// Resolves the published service opts_.embedding_service; mutex_ held.
  caf::error resolve_published();

  std::unique_ptr<runtime::system_config> config_;
  std::unique_ptr<caf::actor_system> owned_system_;
  caf::actor_system* system_ = nullptr;
  bool cluster_ = false;
  registry_actor registry_;
  std::optional<runtime::node_services> local_;
  std::mutex mutex_;
  std::vector<embedding_shard_actor> shards_;
  std::unique_ptr<actors::direct_embedding> direct_;
  std::shared_ptr<const actors::shard_client> shard_client_;
  /// Asks the master for the shards and configs again (opts_.direct_shards on a cluster), and
  /// returns the failure of a backward pass the replaced client had sent but not seen answered.
  caf::error refresh_shard_client(const embedding_master_actor& master);
  std::shared_mutex direct_gate_;
  supervisor_actor shard_supervisor_;
  embedding_master_actor master_;
  /// master_ and sampler_ were published by another session: they are not this one's to stop.
  bool borrowed_ = false;
  candidate_sampler_actor sampler_;
  std::set<std::string> created_;
};

} // namespace darcy::ops
