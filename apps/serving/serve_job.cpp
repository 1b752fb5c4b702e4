#include "apps/serving/serve_job.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include "apps/serving/estimator_model.hpp"
#include "apps/serving/serving_front.hpp"
#include "apps/serving/torch_model.hpp"
#include "messages/error.hpp"
#include "ops/serving.hpp"
#include "ops/torch/torch_export.hpp"
#include "runtime/http/http_server.hpp"
#include "runtime/log.hpp"
#include "runtime/node.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::serving {

namespace {

/// The folders under `exports` that hold at least one export version, by name.
std::vector<std::string> models_in(const std::string& exports) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(exports, ec))
    if (entry.is_directory() && !stores::export_versions(entry.path().string()).empty())
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// An Estimator or PyTorch export, loaded; a retrieval export's newest manifest and config,
/// checked (nullptr: its root loads it). The error says why the model cannot be served.
caf::expected<std::shared_ptr<served_model>> check_model(
  const std::string& dir, const access_rules& rules,
  const ops::estimator::embedding_placement& where, const std::string& sync_dir,
  const replica_options& replicas) {
  if (ops::estimator::is_estimator_export(dir)) {
    auto loaded = estimator_model::load(dir, rules, where, sync_dir, replicas);
    if (!loaded)
      return std::move(loaded.error());
    return std::shared_ptr<served_model>{std::move(*loaded)};
  }
  if (ops::is_torch_export(dir)) {
    if (replicas.replicas != 1)
      return make_error(errc::unsupported,
                        "a PyTorch export is served in one copy (no --replicas)");
    auto loaded = torch_model::load(dir, rules, where, sync_dir);
    if (!loaded)
      return std::move(loaded.error());
    return std::shared_ptr<served_model>{std::move(*loaded)};
  }
  auto manifest = stores::read_export_manifest(dir);
  if (!manifest)
    return std::move(manifest.error());
  auto config = stores::read_export_config(dir, *manifest);
  if (!config)
    return std::move(config.error());
  return std::shared_ptr<served_model>{};
}

} // namespace

caf::error run_serve(const serve_job& job) {
  runtime::block_shutdown_signals();
  if (job.embedding_shards > 0 && !job.cluster)
    return make_error(errc::invalid_config,
                      "embedding shards on a cluster need the cluster (--cluster SEED)");
  if (job.replicas.replicas != 1 && job.embedding_shards == 0)
    return make_error(errc::invalid_config,
                      "replicas are copies of the embedding shards: give --embedding-shards");
  serve_config config;
  if (!job.config.empty()) {
    auto loaded = load_serve_config(job.config);
    if (!loaded)
      return std::move(loaded.error());
    config = std::move(*loaded);
  }
  auto found = models_in(job.exports);
  if (found.empty())
    return make_error(errc::not_found,
                      "no export under " + job.exports +
                        " (write one with `darcy wals export`, or an Estimator's)");
  // Estimator and PyTorch exports answer in this process; the others get a root and shard servers.
  // A model that fails its checks is reported and left out; the others are served.
  std::vector<std::string> models;
  std::vector<std::string> left_out;
  std::map<std::string, std::shared_ptr<served_model>> estimators;
  ops::estimator::embedding_placement where;
  if (job.embedding_shards > 0) {
    where.cluster = job.cluster;
    where.shards = job.embedding_shards;
  }
  for (auto& name : found) {
    auto dir = (std::filesystem::path{job.exports} / name).string();
    auto sync_dir =
      job.sync_dir.empty() ? std::string{} : (std::filesystem::path{job.sync_dir} / name).string();
    auto checked = check_model(dir, config.rules_of(name), where, sync_dir, job.replicas);
    if (!checked) {
      auto why = "model " + name + " left out: " + render(checked.error());
      runtime::log_warn("darcy serve: {}", why);
      left_out.push_back(name);
      continue;
    }
    models.push_back(name);
    if (*checked)
      estimators[name] = std::move(*checked);
  }
  if (models.empty())
    return make_error(errc::corrupt_file,
                      "every export under " + job.exports + " failed its checks (see above)");
  ops::session_options so;
  so.seed = job.cluster;
  so.name = "serve";
  so.threads = job.actor_threads;
  auto session = ops::session::open(so);
  if (!session)
    return std::move(session.error());
  auto& s = **session;
  auto nodes = ops::shard_server_nodes(s);
  if (!nodes)
    return std::move(nodes.error());
  std::map<std::string, serving_root_actor> roots;
  for (auto& name : models) {
    if (estimators.count(name))
      continue;
    actors::serving_root_config rc;
    rc.model = name;
    rc.model_dir = (std::filesystem::path{job.exports} / name).string();
    rc.nodes = *nodes;
    rc.probes = job.probes;
    rc.rerank = job.rerank;
    rc.ef = job.ef;
    rc.shard_batches_in_flight = job.shard_batches;
    rc.shard_batch_limit = job.batch_limit;
    rc.shard_attempt_ms = job.shard_attempt_ms;
    rc.access = config.rules_of(name);
    roots[name] = ops::serve_model(s, std::move(rc));
  }
  serving_front front{s.system(), config, roots, estimators};
  http_server_options ho;
  ho.listen = job.listen;
  ho.threads = job.http_threads;
  ho.max_body_bytes = config.max_body_bytes;
  ho.large_body = [](std::string_view target) { return target.ends_with(":sync"); };
  ho.max_large_body_bytes = config.max_sync_bytes;
  auto server = http_server::start(ho, [&front](http_request req, http_responder respond) {
    front.handle(std::move(req), std::move(respond));
  });
  if (!server)
    return std::move(server.error());
  std::string names;
  for (auto& m : models)
    names += (names.empty() ? "" : ", ") + m;
  std::cout << "darcy serve: " << manage_policy_line(config) << "\n";
  if (!left_out.empty())
    std::cout << "darcy serve: " << left_out.size() << " model(s) left out (see the log)\n";
  std::cout << "darcy serve listening on http://" << job.listen.host << ":" << (*server)->port()
            << " (models: " << names << ")" << std::endl;
  auto signal = runtime::wait_for_shutdown();
  runtime::log_info("darcy serve: shutting down (signal {})", signal);
  (*server)->stop();
  for (auto& [name, root] : roots)
    caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
  return {};
}

} // namespace darcy::serving
