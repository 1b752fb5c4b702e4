#include "ops/session.hpp"

#include <utility>

#include <unistd.h>

#include "actors/actor_types.hpp"
#include "actors/embedding/candidate_sampler.hpp"
#include "actors/embedding/direct_embedding.hpp"
#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "actors/embedding/shard_client.hpp"
#include "messages/error.hpp"
#include "ops/supervised_shards.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/cluster/supervisor.hpp"
#include "runtime/log.hpp"
#include "runtime/system_config.hpp"

namespace darcy::ops {

session::session(session_options opts) : opts_(std::move(opts)), cluster_(opts_.seed.has_value()) {
}

void session::start_system() {
  config_ = std::make_unique<runtime::system_config>(opts_.name, opts_.threads);
  actors::register_actor_types(*config_);
  if (opts_.configure)
    opts_.configure(*config_);
  owned_system_ = std::make_unique<caf::actor_system>(*config_);
  owned_system_->await_actors_before_shutdown(false);
  system_ = owned_system_.get();
}

session::~session() {
  // Actors this session started go first: an actor system must not be destroyed while actors
  // that were handed to other nodes are still alive.
  auto stop = [](const auto& handle) {
    if (handle)
      caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
  };
  if (!borrowed_) {
    stop(master_);
    stop(sampler_);
  }
  stop(shard_supervisor_);
  for (auto& shard : shards_)
    stop(shard);
  if (local_)
    local_->stop();
}

caf::expected<std::unique_ptr<session>> session::open(session_options opts) {
  std::unique_ptr<session> result{new session(std::move(opts))};
  result->start_system();
  auto& sys = result->system();
  if (result->opts_.seed) {
    auto handles = runtime::connect_cluster(sys, *result->opts_.seed, result->opts_.timeout);
    if (!handles)
      return std::move(handles.error());
    result->registry_ = handles->registry;
    sys.registry().put(registry_key, caf::actor_cast<caf::strong_actor_ptr>(handles->registry));
    return result;
  }
  runtime::node_options node;
  node.name = result->opts_.name;
  node.connect_timeout = result->opts_.timeout;
  result->local_ = runtime::start_node_services(sys, node, std::nullopt);
  result->registry_ = result->local_->registry;
  auto joined = runtime::join_cluster(sys, *result->local_, node, {"in-process", 0});
  if (!joined)
    return std::move(joined.error());
  return result;
}

caf::expected<std::unique_ptr<session>> session::attach(caf::actor_system& sys,
                                                        session_options opts) {
  auto registry = sys.registry().get<registry_actor>(registry_key);
  if (!registry)
    return make_error(errc::node_unreachable,
                      "session::attach: this actor system is not a cluster member");
  std::unique_ptr<session> result{new session(std::move(opts))};
  result->system_ = &sys;
  result->cluster_ = true;
  result->registry_ = registry;
  return result;
}

caf::expected<cluster_status> session::status() {
  return runtime::ask<cluster_status>(*system_, registry_, opts_.timeout, status_atom::value);
}

caf::expected<service_info> session::lookup(const std::string& service) {
  return runtime::resolve(*system_, registry_, service, opts_.timeout);
}

supervisor_actor session::supervise(supervisor_spec spec) {
  return system_->spawn(runtime::supervisor, std::move(spec));
}

caf::expected<embedding_master_actor> session::embeddings() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (master_)
    return master_;
  if (!opts_.embedding_service.empty()) {
    if (auto err = resolve_published())
      return err;
    return master_;
  }
  if (opts_.shards == 0)
    return make_error(errc::invalid_config, "an embedding service needs at least one shard");
  std::vector<embedding_shard_actor> shards;
  if (!cluster_) {
    auto local = actors::spawn_local_shards(*system_, opts_.shards);
    shards = std::move(local.actors);
    direct_ = std::make_unique<actors::direct_embedding>(std::move(local.tables));
  } else {
    auto members = status();
    if (!members)
      return std::move(members.error());
    auto live = runtime::live_targets(*members, opts_.shard_nodes);
    if (!live)
      return std::move(live.error());
    // opts_.shards consecutive shards on each member.
    std::vector<runtime::spawn_target> targets;
    for (auto& target : *live)
      targets.insert(targets.end(), opts_.shards, target);
    if (opts_.supervise_shards) {
      // The seed hosts the registry, without which no shard can be replaced: shards stay off
      // it when other members can hold them, so that losing the seed loses no shard.
      std::vector<runtime::spawn_target> off_seed;
      for (auto& target : targets)
        if (target.node != members->seed)
          off_seed.push_back(target);
      if (!off_seed.empty())
        targets = std::move(off_seed);
      auto prefix =
        opts_.name + "." + std::to_string(::getpid()) + "." + std::to_string(runtime::unix_ms());
      auto supervised = start_supervised_shards(*this, targets, prefix);
      if (!supervised)
        return std::move(supervised.error());
      shard_supervisor_ = supervised->supervisor;
      shards_ = supervised->shards;
      actors::embedding_master_options master_opts{supervised->shards};
      master_opts.shard_services = supervised->services;
      master_opts.checkpoint_dir = opts_.shard_checkpoint_dir;
      master_opts.tables_in_memory = opts_.tables_in_memory;
      master_opts.shard_timeout = opts_.timeout * 3;
      master_opts.attempt_timeout = opts_.shard_retry;
      master_opts.attempts = opts_.shard_attempts;
      master_ = system_->spawn(actors::embedding_master, std::move(master_opts));
      sampler_ = system_->spawn(actors::candidate_sampler,
                                actors::candidate_sampler_options{supervised->shards});
      return master_;
    }
    auto spawned = runtime::spawn_group<embedding_shard_actor>(
      *system_, targets, opts_.timeout, actors::embedding_shard_state::name,
      [](size_t i) { return caf::make_message(static_cast<uint32_t>(i)); }, targets.size());
    if (!spawned)
      return std::move(spawned.error());
    shards = std::move(*spawned);
  }
  shards_ = shards;
  actors::embedding_master_options master_opts{shards};
  master_opts.attempt_timeout = opts_.shard_retry;
  master_opts.attempts = opts_.shard_attempts;
  master_opts.shards_may_lose_messages = cluster_;
  master_opts.tables_in_memory = opts_.tables_in_memory;
  master_ = system_->spawn(actors::embedding_master, std::move(master_opts));
  sampler_ =
    system_->spawn(actors::candidate_sampler, actors::candidate_sampler_options{std::move(shards)});
  return master_;
}

const actors::direct_embedding* session::direct_embeddings() {
  if (!embeddings())
    return nullptr;
  std::lock_guard<std::mutex> guard{mutex_};
  return direct_.get();
}

caf::expected<candidate_sampler_actor> session::sampler() {
  if (auto master = embeddings(); !master)
    return std::move(master.error());
  return sampler_;
}

caf::error session::resolve_published() {
  auto master = runtime::resolve(*system_, registry_, opts_.embedding_service, opts_.timeout);
  if (!master)
    return std::move(master.error());
  master_ = caf::actor_cast<embedding_master_actor>(master->actor);
  borrowed_ = true;
  if (auto sampler =
        runtime::resolve(*system_, registry_, opts_.embedding_service + ".sampler", opts_.timeout))
    sampler_ = caf::actor_cast<candidate_sampler_actor>(sampler->actor);
  return {};
}

caf::error session::publish_embeddings(const std::string& service, const std::string& node) {
  if (!cluster_)
    return make_error(errc::invalid_config,
                      "publish_embeddings: an in-process session has no registry to publish in");
  auto master = embeddings();
  if (!master)
    return std::move(master.error());
  for (auto& [name, actor] :
       {std::pair{service, caf::actor_cast<caf::actor>(*master)},
        std::pair{service + ".sampler", caf::actor_cast<caf::actor>(sampler_)}}) {
    auto ok = runtime::ask<ok_atom>(*system_, registry_, opts_.timeout, register_atom::value,
                                    service_info{name, node, actor});
    if (!ok)
      return std::move(ok.error());
  }
  return {};
}

caf::error session::ensure_embedding(const de_config& cfg) {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (created_.count(cfg.name) > 0)
      return {};
  }
  auto master = embeddings();
  if (!master)
    return std::move(master.error());
  auto ok = runtime::ask<ok_atom>(*system_, *master, opts_.timeout, create_atom::value, cfg);
  if (!ok)
    return std::move(ok.error());
  caf::error earlier;
  if (opts_.direct_shards && cluster_)
    earlier = refresh_shard_client(*master);
  std::lock_guard<std::mutex> guard{mutex_};
  created_.insert(cfg.name);
  return earlier;
}

caf::error session::refresh_shard_client(const embedding_master_actor& master) {
  auto route = runtime::ask<shard_route>(*system_, master, opts_.timeout, route_atom::value);
  std::shared_ptr<const actors::shard_client> client;
  if (route)
    client = std::make_shared<const actors::shard_client>(*system_, std::move(*route),
                                                          opts_.timeout, opts_.shard_retry);
  else
    runtime::log_info("session: lookups go through the embedding master: {}",
                      render(route.error()));
  std::shared_ptr<const actors::shard_client> replaced;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    replaced = std::exchange(shard_client_, std::move(client));
  }
  // Its last backward passes may still be unanswered; their failure is the caller's.
  return replaced ? replaced->flush() : caf::error{};
}

std::set<std::string> session::embedding_names() {
  std::lock_guard<std::mutex> guard{mutex_};
  return created_;
}

std::shared_ptr<const actors::shard_client> session::shard_client() {
  std::lock_guard<std::mutex> guard{mutex_};
  return shard_client_;
}

void session::embeddings_restored(std::set<std::string> names) {
  embedding_master_actor master;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    created_ = std::move(names);
    master = master_;
  }
  // The restored configs replace those the route was checked against.
  if (opts_.direct_shards && cluster_ && master)
    if (auto err = refresh_shard_client(master))
      runtime::log_warn("session: a backward pass sent before the restore failed: {}", render(err));
}

} // namespace darcy::ops
