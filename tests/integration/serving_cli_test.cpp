// `darcy serve` and `darcy wals export` as a user runs them, with real processes: an export
// killed before its manifest leaves the previous version served; a graph export is served; a shard
// server's node SIGKILLed under load is replaced, and the model answers whole again; an Estimator
// export's dynamic embeddings served from shards on node processes predict as the export
// in-process, within deadlines, and a sync after a serving node died reloads the export and the
// syncs; with two replicas of the shards, a node SIGKILLed under load costs no failed request;
// shard nodes that cannot read serving's folders are sent the snapshot and the syncs' files.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ops/embedding_ops.hpp"
#include "ops/estimator/export/export.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/word_model.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

/// `darcy serve ARGS...` started and listening; its port.
struct serve_process {
  runtime::child_process process;
  uint16_t port = 0;
};

serve_process start_serve(const std::vector<std::string>& args) {
  std::vector<std::string> argv{DARCY_BINARY, "serve", "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = runtime::child_process::start(argv);
  if (!p) {
    ADD_FAILURE() << render(p.error());
    std::abort();
  }
  auto line = p->wait_for_line("darcy serve listening on", patience);
  if (!line) {
    ADD_FAILURE() << render(line.error()) << "\n" << p->read_stderr();
    std::abort();
  }
  auto host_end = line->find(':', line->find("http://") + 7);
  auto port = static_cast<uint16_t>(std::stoul(line->substr(host_end + 1)));
  return {std::move(*p), port};
}

/// Returns once the cluster of `seed` lists `n` members up, so that a model loaded next puts
/// shards on each of them (a failure after `patience`).
void wait_members(const runtime::host_port& seed, size_t n) {
  auto s = ops::session::open({.seed = seed, .name = "member-count", .threads = 1});
  ASSERT_TRUE(s) << render(s.error());
  auto deadline = std::chrono::steady_clock::now() + patience;
  size_t up = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = (*s)->status();
    up = 0;
    if (status)
      for (auto& m : status->members)
        up += m.state == member_state::up ? 1 : 0;
    if (up == n)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << up << " members up, not " << n;
}

/// Whether process `pid` shows as stopped (a signal's stop takes effect after kill returns)
/// within `patience`.
bool wait_stopped(pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
    std::string stat{std::istreambuf_iterator<char>(in), {}};
    auto after = stat.rfind(')');
    if (after != std::string::npos && stat.size() > after + 2 && stat[after + 2] == 'T')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

/// The model's status, once its state is `available` (a failure after `patience`).
nlohmann::json wait_available(uint16_t port, const std::string& model) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  nlohmann::json status;
  while (std::chrono::steady_clock::now() < deadline) {
    auto answer = http_exchange(port, http_request_text("GET", "/v1/models/" + model, ""));
    status = nlohmann::json::parse(http_body(answer), nullptr, false);
    if (status.is_object() && status.value("state", "") == "available")
      return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "model " << model << " not available: " << status.dump();
  return status;
}

/// A WALS model of dim 8 trained on a small synthetic matrix into `model`.
void train_small_model(const std::string& model) {
  auto trained =
    run_darcy({"wals", "train", "--synthetic-rows", "300", "--synthetic-cols", "200",
               "--synthetic-nnz", "3000", "--dim", "8", "--iters", "2", "--quiet", "--out", model});
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
}

std::string vector_body(int deadline_ms) {
  return R"({"vector": [0.5, -1, 2, 0.25, 1, 1, -0.5, 0], "k": 5, "deadline_ms": )" +
         std::to_string(deadline_ms) + "}";
}

TEST(serving_cli, an_export_killed_before_its_manifest_leaves_the_previous_version_served) {
  temp_dir tmp{"serving_cli_export"};
  auto model = tmp.path() + "/model";
  auto exports = tmp.path() + "/exports";
  ASSERT_NO_FATAL_FAILURE(train_small_model(model));
  std::vector<std::string> export_args{"wals",  "export",           "--model",  model,
                                       "--out", exports + "/songs", "--shards", "2"};
  auto first = run_darcy(export_args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("as version 1"), std::string::npos) << first.out;

  auto pid_file = tmp.path() + "/export.pid";
  std::vector<std::string> argv{DARCY_BINARY};
  argv.insert(argv.end(), export_args.begin(), export_args.end());
  argv.insert(argv.end(), {"--fault-stall-before-commit", pid_file});
  auto second = runtime::child_process::start(argv);
  ASSERT_TRUE(second) << render(second.error());
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!fs::exists(pid_file) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(pid_file)) << second->read_stderr();
  // Every part of version 2 is on disk; only its manifest is missing.
  EXPECT_TRUE(fs::exists(exports + "/songs/2/shard-1/codes.u8"));
  second->signal(SIGKILL);
  ASSERT_TRUE(second->wait(patience));

  auto newest = stores::read_export_manifest(exports + "/songs");
  ASSERT_TRUE(newest) << render(newest.error());
  EXPECT_EQ(newest->checkpoint, "1");
  auto serve = start_serve({"--exports", exports});
  auto status = wait_available(serve.port, "songs");
  EXPECT_EQ(status.value("version", ""), "1");
  auto answer = http_exchange(
    serve.port, http_request_text("POST", "/v1/models/songs:topk", "", vector_body(2000)));
  EXPECT_EQ(http_status(answer), 200u) << answer;
  EXPECT_NE(answer.find("\"version\":\"1\""), std::string::npos) << answer;
}

// `darcy wals export --index graph` writes graph shards, and `darcy serve --ef` answers from them
// what an exact search over the exported items answers.
TEST(serving_cli, a_graph_export_is_served_with_the_answers_of_an_exact_search) {
  temp_dir tmp{"serving_cli_graph"};
  auto model = tmp.path() + "/model";
  auto exports = tmp.path() + "/exports";
  ASSERT_NO_FATAL_FAILURE(train_small_model(model));
  auto exported = run_darcy({"wals", "export", "--model", model, "--out", exports + "/songs",
                             "--shards", "2", "--index", "graph", "--graph-m", "8"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(fs::exists(exports + "/songs/1/shard-1/bottom.u32"));
  auto refused =
    run_darcy({"wals", "export", "--model", model, "--out", exports + "/other", "--index", "hnsw"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  auto manifest = stores::read_export_manifest(exports + "/songs");
  ASSERT_TRUE(manifest) << render(manifest.error());
  auto root = stores::load_export_root(exports + "/songs", *manifest);
  ASSERT_TRUE(root) << render(root.error());
  EXPECT_EQ(root->config.index, compute::mips::mips_index_kind::graph);
  std::vector<float> query{0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 0};
  std::vector<std::pair<float, uint64_t>> exact;
  for (uint64_t i = 0; i < root->config.items; ++i) {
    float score = 0;
    for (size_t d = 0; d < 8; ++d)
      score += query[d] * root->items.data()[i * 8 + d];
    exact.emplace_back(-score, i);
  }
  std::sort(exact.begin(), exact.end());
  auto serve = start_serve({"--exports", exports, "--ef", "200"});
  wait_available(serve.port, "songs");
  auto answer = http_exchange(
    serve.port, http_request_text("POST", "/v1/models/songs:topk", "", vector_body(2000)));
  ASSERT_EQ(http_status(answer), 200u) << answer;
  auto items = nlohmann::json::parse(http_body(answer))["items"];
  ASSERT_EQ(items.size(), 5u) << answer;
  for (size_t r = 0; r < 5; ++r)
    EXPECT_EQ(items[r]["id"].get<uint64_t>(), exact[r].second) << "rank " << r << ": " << answer;
}

// Started with no --config: a damaged model is reported and left out while the good one is
// served; the start says that only loopback clients may manage models; a version that is a
// path is refused without naming one.
TEST(serving_cli, a_damaged_model_beside_a_good_one_leaves_the_good_one_served) {
  temp_dir tmp{"serving_cli_damaged"};
  stores::export_input in;
  in.config.shards = 2;
  in.items = gaussian_matrix(300, 8, 1);
  in.index = {.lists = 4, .seed = 2};
  ASSERT_TRUE(stores::write_export(tmp.path() + "/good", in, 2));
  ASSERT_TRUE(stores::write_export(tmp.path() + "/broken", in, 2));
  {
    std::ofstream manifest{tmp.path() + "/broken/MANIFEST", std::ios::trunc};
    manifest << "not a manifest";
  }
  auto serve = start_serve({"--exports", tmp.path()});
  auto status = wait_available(serve.port, "good");
  EXPECT_EQ(status.value("version", ""), "1");
  auto out = serve.process.stdout_seen();
  EXPECT_NE(out.find(":load and :unload are accepted from loopback only"), std::string::npos)
    << out;
  EXPECT_NE(out.find("1 model(s) left out"), std::string::npos) << out;
  auto models = http_exchange(serve.port, http_request_text("GET", "/v1/models", ""));
  EXPECT_EQ(models.find("broken"), std::string::npos) << models;
  auto broken = http_exchange(
    serve.port, http_request_text("POST", "/v1/models/broken:topk", "", vector_body(2000)));
  EXPECT_EQ(http_status(broken), 404u) << broken;
  auto answer = http_exchange(
    serve.port, http_request_text("POST", "/v1/models/good:topk", "", vector_body(2000)));
  EXPECT_EQ(http_status(answer), 200u) << answer;
  for (auto version : {"/etc", "../../../etc"}) {
    auto load =
      http_exchange(serve.port, http_request_text("POST", "/v1/models/good:load", "",
                                                  nlohmann::json{{"version", version}}.dump()));
    EXPECT_EQ(http_status(load), 400u) << load;
    EXPECT_EQ(load.find("/etc"), std::string::npos) << load;
  }
  serve.process.signal(SIGTERM);
  ASSERT_TRUE(serve.process.wait(patience));
  EXPECT_NE(serve.process.read_stderr().find("model broken left out"), std::string::npos)
    << serve.process.read_stderr();
}

class serving_cluster_test : public cluster_test {};

TEST_F(serving_cluster_test, a_shard_server_sigkilled_under_load_is_restarted_and_answers) {
  temp_dir tmp{"serving_cluster"};
  stores::export_input in;
  in.config.shards = 3;
  in.items = gaussian_matrix(3000, 8, 1);
  in.index = {.lists = 8, .seed = 2};
  ASSERT_TRUE(stores::write_export(tmp.path() + "/m", in, 2));
  auto [a, b, c] = start_three();
  auto serve = start_serve({"--exports", tmp.path(), "--cluster", runtime::to_string(a.address)});
  auto status = wait_available(serve.port, "m");
  // The victim: a shard server on a node that is not the seed.
  std::string victim_node;
  for (auto& shard : status["shards"])
    if (shard.value("node", "") != "a")
      victim_node = shard.value("node", "");
  ASSERT_FALSE(victim_node.empty()) << status.dump();

  std::atomic<bool> stop{false};
  std::atomic<size_t> ok{0};
  std::atomic<size_t> refused{0};
  std::atomic<size_t> other{0};
  std::thread client{[&] {
    while (!stop) {
      auto code = http_status(http_exchange(
        serve.port, http_request_text("POST", "/v1/models/m:topk", "", vector_body(1000))));
      if (code == 200)
        ++ok;
      else if (code == 503 || code == 504)
        ++refused; // a shard is down until its supervisor restarts it
      else
        ++other;
    }
  }};
  auto wait_for = [](auto done) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  EXPECT_TRUE(wait_for([&] { return ok >= 20; }));
  (victim_node == "b" ? b : c).process.signal(SIGKILL);
  // Restarted elsewhere, from the export: every shard up, one restarted.
  auto restarted = [&] {
    auto answer = http_exchange(serve.port, http_request_text("GET", "/v1/models/m", ""));
    auto s = nlohmann::json::parse(http_body(answer), nullptr, false);
    if (!s.is_object())
      return false;
    size_t restarts = 0;
    for (auto& shard : s["shards"]) {
      if (!shard.value("up", false) || shard.value("node", "") == victim_node)
        return false;
      restarts += shard.value("restarts", 0u);
    }
    return restarts >= 1;
  };
  EXPECT_TRUE(wait_for(restarted));
  auto before = ok.load();
  EXPECT_TRUE(wait_for([&] { return ok >= before + 20; }));
  stop = true;
  client.join();
  EXPECT_EQ(other, 0u);
  auto answer = http_exchange(
    serve.port, http_request_text("POST", "/v1/models/m:topk", "", vector_body(2000)));
  EXPECT_EQ(http_status(answer), 200u) << answer;
  EXPECT_NE(answer.find("\"partial\":false"), std::string::npos) << answer;
}

TEST_F(serving_cluster_test,
       an_estimator_exports_embeddings_on_node_shards_predict_as_in_process_within_deadlines) {
  temp_dir tmp{"sharded_predict"};
  auto data = words(64);
  auto s = ops::session::open({});
  ASSERT_TRUE(s) << render(s.error());
  ops::estimator::estimator e{model(**s), session_config(**s)};
  ASSERT_TRUE(e.train(column_input(data, 0), 30));
  ASSERT_TRUE(ops::estimator::export_model(e, tmp.path() + "/words", column_input(data, 1)));
  auto local = ops::estimator::exported_model::load(tmp.path() + "/words");
  ASSERT_TRUE(local) << render(local.error());
  EXPECT_FALSE((*local)->sharded_embeddings());

  auto [a, b, c] = start_three();
  wait_members(a.address, 3);
  auto serve = start_serve({"--exports", tmp.path(), "--cluster", runtime::to_string(a.address),
                            "--embedding-shards", "1"});
  auto described = nlohmann::json::parse(
    http_body(http_exchange(serve.port, http_request_text("GET", "/v1/models/words", ""))));
  EXPECT_EQ(described.value("embeddings", ""), "shards") << described.dump();
  // Known words, and one first seen now.
  auto body = R"({"instances": [{"x": 0.5, "words": ["w0", "common"]},
                               {"x": -0.2, "words": ["w1", "common"]},
                               {"x": 1.5, "words": ["new", "common"]}]})";
  auto answer =
    http_exchange(serve.port, http_request_text("POST", "/v1/models/words:predict", "", body));
  ASSERT_EQ(http_status(answer), 200) << answer;
  auto served = nlohmann::json::parse(http_body(answer))["predictions"];
  ops::estimator::batch batch;
  batch.features["x"] = ce::feature_value::numeric(std::vector<double>{0.5, -0.2, 1.5});
  batch.features["words"] =
    ce::feature_value::categorical({{"w0", "common"}, {"w1", "common"}, {"new", "common"}});
  auto expected = (*local)->predict(batch);
  ASSERT_TRUE(expected) << render(expected.error());
  ASSERT_EQ(served.size(), 3u) << served.dump();
  for (size_t r = 0; r < 3; ++r)
    EXPECT_NEAR(served[r][0].get<double>(), (*expected)(Eigen::Index(r), 0), 1e-6) << r;

  EXPECT_EQ(nlohmann::json::parse(http_body(answer)).value("partial", true), false) << answer;

  // Shards silent at the request's deadline (every node stopped for a moment, well within the
  // heartbeat timeout): a 504, or with allow_partial an answer flagged partial; once they
  // answer again, whole answers.
  auto limited = [&](bool allow_partial) {
    auto j = nlohmann::json::parse(body);
    j["deadline_ms"] = 300;
    j["allow_partial"] = allow_partial;
    return http_exchange(serve.port,
                         http_request_text("POST", "/v1/models/words:predict", "", j.dump()));
  };
  for (auto* n : {&a, &b, &c}) {
    n->process.signal(SIGSTOP);
    ASSERT_TRUE(wait_stopped(n->process.pid()));
  }
  auto refused = limited(false);
  auto partial = limited(true);
  for (auto* n : {&a, &b, &c})
    n->process.signal(SIGCONT);
  EXPECT_EQ(http_status(refused), 504u) << refused;
  ASSERT_EQ(http_status(partial), 200u) << partial;
  EXPECT_TRUE(nlohmann::json::parse(http_body(partial)).value("partial", false)) << partial;
  auto whole =
    http_exchange(serve.port, http_request_text("POST", "/v1/models/words:predict", "", body));
  ASSERT_EQ(http_status(whole), 200u) << whole;
  EXPECT_FALSE(nlohmann::json::parse(http_body(whole)).value("partial", true)) << whole;

  // The rows are on the nodes, not in the serving process: without them, no answer.
  b.process.signal(SIGKILL);
  c.process.signal(SIGKILL);
  auto lost =
    http_exchange(serve.port, http_request_text("POST", "/v1/models/words:predict", "", body));
  EXPECT_NE(http_status(lost), 200) << lost;
}

/// The body of a predict for two known words, and the batch it stands for.
constexpr const char* words_body = R"({"instances": [{"x": 0.5, "words": ["w0", "common"]},
                                                    {"x": -0.2, "words": ["w1", "common"]}]})";

ops::estimator::batch words_batch() {
  ops::estimator::batch b;
  b.features["x"] = ce::feature_value::numeric(std::vector<double>{0.5, -0.2});
  b.features["words"] = ce::feature_value::categorical({{"w0", "common"}, {"w1", "common"}});
  return b;
}

/// A words model trained in this process and exported as `exports`/words, with the chain of
/// syncs serving follows (ops::save, a full checkpoint every 5) under `sync_dir`.
struct words_training {
  std::shared_ptr<ops::estimator::example_table> data = words(64);
  std::unique_ptr<ops::session> session;
  std::optional<ops::estimator::estimator> e;
  std::string exports, sync_dir;

  /// Trains 20 steps, exports, and writes sync 1.
  void start(const std::string& exports_dir, const std::string& sync) {
    exports = exports_dir;
    sync_dir = sync;
    auto s = ops::session::open({});
    ASSERT_TRUE(s) << render(s.error());
    session = std::move(*s);
    e.emplace(model(*session), session_config(*session));
    ASSERT_TRUE(e->train(column_input(data, 0), 20));
    ASSERT_TRUE(ops::estimator::export_model(*e, exports + "/words", column_input(data, 1)));
    ASSERT_FALSE(ops::save(*session, sync_dir, {1, "", {}}, 5));
  }

  /// Trains on to global step `to` and writes sync `step`.
  void sync_again(uint64_t to, int64_t step) {
    ASSERT_TRUE(e->train(column_input(data, 0), to));
    ASSERT_FALSE(ops::save(*session, sync_dir, {step, "", {}}, 5));
  }

  /// :sync of the model served on `port` to the sync folder: the status and the JSON answer.
  std::pair<unsigned, nlohmann::json> push(uint16_t port) const {
    auto answer = http_exchange(port, http_request_text("POST", "/v1/models/words:sync", "",
                                                        nlohmann::json{{"dir", sync_dir}}.dump()));
    return {http_status(answer), nlohmann::json::parse(http_body(answer), nullptr, false)};
  }

  /// Expects `rounds` predictions served on `port` to be whole, at sync `step`, and those of
  /// the export following the sync folder in this process.
  void expect_served_as_followed(uint16_t port, int64_t step, int rounds = 1) const {
    auto reference = ops::estimator::exported_model::load(exports + "/words");
    ASSERT_TRUE(reference) << render(reference.error());
    ASSERT_TRUE((*reference)->follow(sync_dir));
    auto expected = (*reference)->predict(words_batch());
    ASSERT_TRUE(expected) << render(expected.error());
    for (int round = 0; round < rounds; ++round) {
      auto answer =
        http_exchange(port, http_request_text("POST", "/v1/models/words:predict", "", words_body));
      ASSERT_EQ(http_status(answer), 200u) << answer;
      auto served = nlohmann::json::parse(http_body(answer));
      EXPECT_FALSE(served.value("partial", true));
      EXPECT_EQ(served["sync"]["step"], step);
      for (Eigen::Index r = 0; r < 2; ++r)
        EXPECT_NEAR(served["predictions"][r][0].get<double>(), (*expected)(r, 0), 1e-6) << r;
    }
  }
};

// A serving shard's node SIGKILLed in the middle of a sync: that sync or the next brings the
// model to the export plus every sync, never a half-applied one. Which mends the lost shard
// depends on when the cluster sees the node down: serving loads the export onto the live
// members and restores the chain ("reloaded"), or the service's master has already started the
// shard again elsewhere from its last checkpoint and the sync applies there.
TEST_F(serving_cluster_test, a_sync_after_a_serving_node_dies_brings_the_model_to_every_sync) {
  temp_dir tmp{"sharded_reload"};
  words_training t;
  ASSERT_NO_FATAL_FAILURE(t.start(tmp.path(), tmp.path() + "/sync"));
  auto [a, b, c] = start_three();
  wait_members(a.address, 3);
  auto serve = start_serve({"--exports", tmp.path(), "--cluster", runtime::to_string(a.address),
                            "--embedding-shards", "1"});
  ASSERT_EQ(t.push(serve.port).first, 200u);
  // Node c dies in the middle of the next sync: stopped before it, killed while it runs.
  ASSERT_NO_FATAL_FAILURE(t.sync_again(60, 2));
  c.process.signal(SIGSTOP);
  ASSERT_TRUE(wait_stopped(c.process.pid()));
  std::pair<unsigned, nlohmann::json> synced;
  std::thread interrupted{[&] { synced = t.push(serve.port); }};
  c.process.signal(SIGKILL); // however far that sync got, c never answers it
  ASSERT_TRUE(c.process.wait(patience));
  interrupted.join();
  // That sync, or one after it (refused while the cluster still lists the dead node), holds.
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (synced.first != 200 && std::chrono::steady_clock::now() < deadline)
    synced = t.push(serve.port);
  ASSERT_EQ(synced.first, 200u) << synced.second.dump();
  EXPECT_EQ(synced.second["sync"]["step"], 2) << synced.second.dump();
  t.expect_served_as_followed(serve.port, 2, 3);
}

TEST_F(serving_cluster_test, a_replica_node_sigkilled_under_load_costs_no_failed_request) {
  temp_dir tmp{"sharded_replicas"};
  words_training t;
  ASSERT_NO_FATAL_FAILURE(t.start(tmp.path(), tmp.path() + "/sync"));
  // Two copies of the shards: a and c hold one, b the other.
  auto [a, b, c] = start_three();
  wait_members(a.address, 3);
  auto serve = start_serve({"--exports", tmp.path(), "--cluster", runtime::to_string(a.address),
                            "--embedding-shards", "1", "--replicas", "2"});
  auto describe = [&] {
    return nlohmann::json::parse(
      http_body(http_exchange(serve.port, http_request_text("GET", "/v1/models/words", ""))));
  };
  auto first = t.push(serve.port);
  ASSERT_EQ(first.first, 200u) << first.second.dump();
  EXPECT_EQ(first.second["replicas_serving"], 2) << first.second.dump();
  auto replicas = describe()["replicas"];
  ASSERT_EQ(replicas.size(), 2u) << replicas.dump();
  EXPECT_EQ(replicas[0]["members"], nlohmann::json({"a", "c"})) << replicas.dump();
  EXPECT_EQ(replicas[1]["members"], nlohmann::json({"b"})) << replicas.dump();

  // A client asks without pause throughout; every answer must be whole.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> answered{0}, failed{0};
  std::string first_failure;
  std::thread client{[&] {
    while (!stop) {
      auto answer = http_exchange(
        serve.port, http_request_text("POST", "/v1/models/words:predict", "", words_body));
      auto j = nlohmann::json::parse(http_body(answer), nullptr, false);
      if (http_status(answer) == 200u && j.is_object() && !j.value("partial", true)) {
        ++answered;
      } else if (failed++ == 0) {
        first_failure = answer;
      }
    }
  }};
  auto await_answers = [&](uint64_t more) {
    auto want = answered + more;
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (answered < want && failed == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  };
  await_answers(20);
  c.process.signal(SIGKILL);
  ASSERT_TRUE(c.process.wait(patience));
  await_answers(50);
  // A sync loads the lost copy again on the member left to it, with the chain, before it takes
  // requests again (refused while the cluster still lists the dead node).
  ASSERT_NO_FATAL_FAILURE(t.sync_again(40, 2));
  auto synced = t.push(serve.port);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!(synced.first == 200 && synced.second.value("replicas_serving", 0) == 2) &&
         std::chrono::steady_clock::now() < deadline)
    synced = t.push(serve.port);
  ASSERT_EQ(synced.first, 200u) << synced.second.dump();
  EXPECT_EQ(synced.second["replicas_serving"], 2) << synced.second.dump();
  EXPECT_EQ(synced.second["sync"]["step"], 2);
  await_answers(50);
  stop = true;
  client.join();
  EXPECT_EQ(failed, 0u) << first_failure;
  // Requests that found copy 0's shard gone took it out of service and went to copy 1.
  EXPECT_NE(serve.process.read_stderr().find("replica 0 of"), std::string::npos)
    << serve.process.read_stderr();
  replicas = describe()["replicas"];
  EXPECT_EQ(replicas[0]["members"], nlohmann::json({"a"})) << replicas.dump();
  EXPECT_EQ(replicas[0]["reloads"], 1) << replicas.dump();
  EXPECT_EQ(replicas[1]["reloads"], 0) << replicas.dump();
  for (auto& r : replicas)
    EXPECT_TRUE(r["serving"].get<bool>()) << replicas.dump();

  // Both copies answer as the export plus every sync.
  t.expect_served_as_followed(serve.port, 2, 2);
}

TEST_F(serving_cluster_test, shard_nodes_that_cannot_read_servings_folders_are_sent_their_files) {
  if (::geteuid() != 0 || !fs::exists("/usr/bin/unshare"))
    GTEST_SKIP() << "a mount namespace of a node's own needs root and unshare";
  temp_dir tmp{"shipped_files"};
  words_training t;
  ASSERT_NO_FATAL_FAILURE(t.start(tmp.path() + "/exports", tmp.path() + "/sync"));

  // Each node sees an empty folder of its own where this test's folder is: the export, the
  // syncs and serving's mirror of them are not on its disk.
  auto hidden_node = [&](const std::string& name,
                         const std::string& join) -> caf::expected<node_process> {
    std::vector<std::string> argv{"/usr/bin/unshare",
                                  "--mount",
                                  "--propagation",
                                  "private",
                                  "/bin/sh",
                                  "-c",
                                  "mount -t tmpfs tmpfs \"$0\" "
                                  "&& exec \"$@\"",
                                  tmp.path(),
                                  DARCY_BINARY,
                                  "node",
                                  "--name",
                                  name,
                                  "--listen",
                                  "127.0.0.1:0",
                                  "--threads",
                                  "1"};
    if (!join.empty())
      argv.insert(argv.end(), {"--join", join});
    return runtime::launch_node(argv, std::chrono::seconds(30));
  };
  auto a = hidden_node("a", "");
  ASSERT_TRUE(a) << render(a.error());
  auto b = hidden_node("b", runtime::to_string(a->address));
  ASSERT_TRUE(b) << render(b.error());
  for (auto* n : {&*a, &*b}) {
    std::ifstream in{"/proc/" + std::to_string(n->process.pid()) + "/mountinfo"};
    std::string mounts{std::istreambuf_iterator<char>(in), {}};
    EXPECT_NE(mounts.find(" " + tmp.path() + " "), std::string::npos)
      << "the node's view of the folder is a mount of its own";
  }
  wait_members(a->address, 2);
  auto serve =
    start_serve({"--exports", tmp.path() + "/exports", "--cluster", runtime::to_string(a->address),
                 "--embedding-shards", "1", "--sync-dir", tmp.path() + "/mirror"});
  auto first = t.push(serve.port);
  ASSERT_EQ(first.first, 200u) << first.second.dump();
  ASSERT_NO_FATAL_FAILURE(t.sync_again(40, 2));
  auto second = t.push(serve.port);
  ASSERT_EQ(second.first, 200u) << second.second.dump();
  EXPECT_EQ(second.second["sync"]["applied"], 1) << "a delta, applied by the shards";
  // What each node holds of the folder is what was sent to it: the sync's links, not what
  // this test writes there.
  std::ofstream{tmp.path() + "/written-here"} << "x";
  auto head = second.second["sync"]["checkpoint"].get<std::string>();
  for (auto* n : {&*a, &*b}) {
    auto root = "/proc/" + std::to_string(n->process.pid()) + "/root";
    EXPECT_TRUE(fs::exists(root + t.sync_dir + "/" + head + "/MANIFEST")) << root;
    EXPECT_FALSE(fs::exists(root + tmp.path() + "/written-here")) << root;
  }
  t.expect_served_as_followed(serve.port, 2);
}

} // namespace
} // namespace darcy::test
