// The serving part of `darcy-bench soak`: `darcy serve` answers a fixed stream of top-k
// queries from a model whose shard servers run on a local cluster, while the soak kills nodes
// and drops and delays messages to the shards. A query refused meanwhile (503 or 504) is asked
// again, as a client would; every answer must equal the clean run's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "apps/chaos/soak.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

/// `darcy serve` started on a soak's cluster, and the port of its HTTP API.
struct serve_run {
  std::optional<runtime::child_process> process;
  uint16_t port = 0;
};

/// Starts `darcy serve --cluster SEED ARGS` (ARGS name --exports and --listen) and waits until
/// GET /v1/models/MODEL answers a body that `ready` accepts; errc::io_error with serve's
/// messages when it does not start or the model is not ready within 120 s.
caf::expected<serve_run> start_serve(const std::string& binary,
                                     const std::vector<std::string>& args,
                                     const testing::local_cluster& nodes, const std::string& model,
                                     const std::function<bool(const nlohmann::json&)>& ready);

/// What a soak's client sees of one request: `request` (HTTP text) is sent until the server
/// answers 200 with a JSON object that `whole` accepts, and returned. A refusal (503, 504 or no
/// answer) is counted in `asked_again` and sent again after `wait`, until `patience` has passed
/// or `stop`; then, or for any other answer, errc::io_error naming the last answer.
caf::expected<nlohmann::json> ask_until_answered(
  uint16_t port, const std::string& request,
  const std::function<bool(const nlohmann::json&)>& whole, std::chrono::milliseconds wait,
  std::chrono::milliseconds patience, const std::atomic<bool>& stop,
  std::atomic<uint64_t>& asked_again);

/// The serving soak: a model of 30,000 items in 3 shards, 6,000 requests over 200 distinct
/// query vectors from 2 clients. lost_work counts the requests asked again; the quality is the
/// mean recall@10 of the answers against exact search; bit_equal says that every answer (ids
/// and scores) equals the clean run's for its query. errc::io_error when the clean run fails.
caf::expected<soak_result> run_serving_soak(const soak_options& o, const std::string& binary);

} // namespace darcy::apps
