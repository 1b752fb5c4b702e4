// The HTTP API of retrieval serving, on top of the models' roots: authenticates bearer tokens,
// turns JSON bodies into requests with a context (deadline, principal, app, trace id), and
// answers JSON. Every refusal is a 4xx (5xx only for a model that cannot answer in time or is
// down) with {"error": {"code", "message"}}.
//
//   POST /v1/models/{name}:topk     {"user": id} | {"items": [...], "values": [...]}
//                                   | {"vector": [...]}, and "k", "deadline_ms", "allow_partial"
//   GET  /v1/models                 the models and their states
//   GET  /v1/models/{name}          its version, shards' health, load history
//   POST /v1/models/{name}:load     {"version": "3"} (empty or absent: the newest)
//   POST /v1/models/{name}:unload
//   GET  /metrics                   Prometheus text
//   POST /v1/models/{name}:predict  an Estimator or PyTorch export's predictions (served_model.hpp)
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "apps/serving/http_metrics.hpp"
#include "apps/serving/serve_config.hpp"
#include "apps/serving/served_model.hpp"
#include "messages/serving/serving_interfaces.hpp"
#include "runtime/http/http_server.hpp"

namespace darcy::serving {

// The front end answers through the runtime's HTTP server (every node's status page uses it too).
using runtime::http_request;
using runtime::http_responder;
using runtime::http_response;
using runtime::http_server;
using runtime::http_server_options;
using runtime::json_error;

/// The HTTP status of an error answered by a root (or a front-end check).
unsigned http_status_of(const caf::error& err);

class serving_front {
public:
  serving_front(caf::actor_system& sys, serve_config config,
                std::map<std::string, serving_root_actor> roots,
                std::map<std::string, std::shared_ptr<served_model>> estimators = {});
  ~serving_front();
  serving_front(const serving_front&) = delete;
  serving_front& operator=(const serving_front&) = delete;

  /// The http_handler of the server; answers exactly once.
  void handle(http_request request, http_responder respond);

private:
  void topk(const std::string& model, const serving_root_actor& root, const http_request& req,
            http_responder respond);
  void manage(const std::string& model, const serving_root_actor& root, bool load,
              const http_request& req, http_responder respond);
  void describe(const std::string& model, const serving_root_actor& root, http_responder respond);
  void add_items(const std::string& model, const serving_root_actor& root, const http_request& req,
                 http_responder respond);
  void list(http_responder respond);
  /// The routes of a model answered in this process (Estimator or PyTorch): GET its description,
  /// POST :predict and :sync (which runs on a thread of its own, so that the HTTP threads go on
  /// answering meanwhile).
  void estimator_route(const std::string& model, const std::shared_ptr<served_model>& m,
                       const std::string& verb, const http_request& req, http_responder respond);
  void metrics(http_responder respond);

  /// The principal of the request's bearer token; errc::unauthenticated when tokens are
  /// configured and it has none, or an unknown one.
  caf::expected<std::string> principal_of(const http_request& req) const;
  request_context context_of(const http_request& req, const std::string& principal,
                             uint32_t deadline_ms);

  caf::actor_system& sys_;
  /// Sends every request of the front to the roots (see front_task).
  caf::actor bridge_;
  serve_config config_;
  std::map<std::string, serving_root_actor> roots_;
  std::map<std::string, std::shared_ptr<served_model>> estimators_;
  http_metrics metrics_;
  std::atomic<uint64_t> next_trace_{1};
};

} // namespace darcy::serving
