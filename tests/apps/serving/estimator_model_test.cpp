// Estimator exports behind the serving front end: predict bodies parsed into batches (every
// malformed one refused), and an exported model answering :predict over HTTP exactly as the
// estimator that trained it, behind the same tokens and ACLs as retrieval models.
#include "apps/serving/estimator_model.hpp"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/serving/serving_front.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/online/sync_push.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "tests/support/estimator_blobs.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"
#include "tests/support/word_model.hpp"

namespace darcy::serving {
namespace {

using namespace test::estimator_blobs;

/// One Estimator model, loaded from `dir` under `config`'s rules for `name`, behind a serving
/// front end on a free loopback port.
class front_end {
public:
  front_end(const serve_config& config, const std::string& name, const std::string& dir) {
    auto model = estimator_model::load(dir, config.rules_of(name));
    EXPECT_TRUE(model) << render(model.error());
    if (!model)
      return;
    front_ = std::make_unique<serving_front>(
      sys_, config, std::map<std::string, serving_root_actor>{},
      std::map<std::string, std::shared_ptr<served_model>>{{name, std::move(*model)}});
    auto server = http_server::start({.listen = {"127.0.0.1", 0}, .threads = 2},
                                     [this](http_request req, http_responder respond) {
                                       front_->handle(std::move(req), std::move(respond));
                                     });
    EXPECT_TRUE(server) << render(server.error());
    if (server)
      server_ = std::move(*server);
  }
  ~front_end() {
    if (server_)
      server_->stop();
  }
  bool ready() const { return server_ != nullptr; }
  uint16_t port() const { return server_->port(); }

private:
  test::test_config cfg_;
  caf::actor_system sys_{cfg_};
  std::unique_ptr<serving_front> front_;
  std::unique_ptr<http_server> server_;
};

/// The words model of the sync tests: trained 20 steps in a session of its own and exported to
/// DIR/words; its session and estimator go on training for a test's syncs.
struct trained_words {
  std::shared_ptr<ops::estimator::example_table> data = test::words(64);
  std::unique_ptr<ops::session> training;
  std::optional<estimator> e;
  /// DIR/sync: where save() writes the run's incremental chain.
  std::string sync_dir;

  void start(const std::string& dir) {
    sync_dir = dir + "/sync";
    auto s = ops::session::open({});
    ASSERT_TRUE(s);
    training = std::move(*s);
    e.emplace(test::model(*training), test::session_config(*training));
    ASSERT_TRUE(e->train(test::column_input(data, 0), 20));
    ASSERT_TRUE(export_model(*e, dir + "/words", test::column_input(data, 1)));
  }
  /// Trains on until global step `steps`.
  void train(uint64_t steps) { ASSERT_TRUE(e->train(test::column_input(data, 0), steps)); }
  /// A checkpoint of the tables at `step` in the chain under sync_dir.
  void save(int64_t step, uint32_t full_every = 5) {
    ASSERT_FALSE(ops::save(*training, sync_dir, {step, "", {}}, full_every));
  }
};

/// Tokens of alice, who may manage model "words", and bob, who may only query it.
constexpr const char* alice_manages_words = R"(
[tokens]
"tok-alice" = "alice"
"tok-bob" = "bob"
[models.words]
manage = ["alice"]
)";

TEST(estimator_model, predict_bodies_become_batches_and_malformed_ones_are_refused) {
  auto good = parse_predict(
    R"({"instances": [{"xy": [1, 2], "tag": "tag0", "words": ["a", "b"]},
                      {"xy": [3.5, -1], "tag": "tag2", "words": []}]})");
  ASSERT_TRUE(good) << render(good.error());
  auto& features = good->batch.features;
  EXPECT_EQ(features.at("xy").width, 2u);
  EXPECT_EQ(features.at("xy").numbers, (std::vector<double>{1, 2, 3.5, -1}));
  EXPECT_EQ(features.at("tag").strings,
            (std::vector<std::vector<std::string>>{{"tag0"}, {"tag2"}}));
  EXPECT_EQ(features.at("words").strings[1].size(), 0u);
  EXPECT_EQ(good->batch.labels.size(), 0);
  EXPECT_EQ(good->deadline_ms, 0u);
  EXPECT_FALSE(good->allow_partial);
  auto limited =
    parse_predict(R"({"instances": [{"x": 1}], "deadline_ms": 50, "allow_partial": true})");
  ASSERT_TRUE(limited) << render(limited.error());
  EXPECT_EQ(limited->deadline_ms, 50u);
  EXPECT_TRUE(limited->allow_partial);

  std::string too_many = R"({"instances": [)";
  for (size_t i = 0; i <= max_predict_instances; ++i)
    too_many += std::string{i ? "," : ""} + R"({"x": 1})";
  too_many += "]}";
  struct {
    const char* what;
    std::string body;
    errc expected;
  } bad[] = {
    {"not JSON", R"({"instances": [)", errc::invalid_argument},
    {"no instances", R"({"rows": []})", errc::invalid_argument},
    {"an extra field", R"({"instances": [{"x": 1}], "k": 3})", errc::invalid_argument},
    {"no instance", R"({"instances": []})", errc::empty_batch},
    {"an instance that is no object", R"({"instances": [3]})", errc::invalid_argument},
    {"a nested object", R"({"instances": [{"x": {"y": 1}}]})", errc::invalid_argument},
    {"widths that differ", R"({"instances": [{"x": [1, 2]}, {"x": [1]}]})", errc::invalid_argument},
    {"numbers, then strings", R"({"instances": [{"x": 1}, {"x": "a"}]})", errc::invalid_argument},
    {"a mixed list", R"({"instances": [{"x": ["a", 1]}]})", errc::invalid_argument},
    {"a feature missing later", R"({"instances": [{"x": 1, "y": 2}, {"x": 1}]})",
     errc::invalid_argument},
    {"another feature later", R"({"instances": [{"x": 1}, {"y": 1}]})", errc::invalid_argument},
    {"a boolean", R"({"instances": [{"x": true}]})", errc::invalid_argument},
    {"too many instances", too_many, errc::batch_too_large},
    {"a zero deadline", R"({"instances": [{"x": 1}], "deadline_ms": 0})", errc::invalid_argument},
    {"a deadline past the most", R"({"instances": [{"x": 1}], "deadline_ms": 60001})",
     errc::invalid_argument},
    {"a negative deadline", R"({"instances": [{"x": 1}], "deadline_ms": -5})",
     errc::invalid_argument},
    {"allow_partial no boolean", R"({"instances": [{"x": 1}], "allow_partial": 1})",
     errc::invalid_argument},
  };
  for (auto& b : bad) {
    auto r = parse_predict(b.body);
    ASSERT_FALSE(r) << b.what;
    EXPECT_TRUE(is(r.error(), b.expected)) << b.what << ": " << render(r.error());
  }
}

TEST(estimator_model, an_export_answers_predict_over_http_as_the_estimator_does) {
  test::temp_dir dir{"estimator_serving"};
  auto fn = dnn_linear_combined_model(blob_options());
  ASSERT_TRUE(fn);
  estimator e{*fn, config()};
  auto data = blobs(90, 7);
  ASSERT_TRUE(e.train(input(data, 0), 60));
  ASSERT_TRUE(export_model(e, dir.path() + "/blobs", input(data, 1)));
  EXPECT_TRUE(is_estimator_export(dir.path() + "/blobs"));
  EXPECT_FALSE(is_estimator_export(dir.path()));
  auto expected = e.predict(
    [data] { return make_dataset(data, {.batch_size = 3, .epochs = 1, .shuffle = false}); });
  ASSERT_TRUE(expected);

  auto config = parse_serve_config(R"(
[tokens]
"tok-alice" = "alice"
"tok-mallory" = "mallory"
[models.blobs]
query = ["alice"]
)",
                                   "test.toml");
  ASSERT_TRUE(config) << render(config.error());
  front_end server{*config, "blobs", dir.path() + "/blobs"};
  ASSERT_TRUE(server.ready());

  auto& xy = data->features.at("xy").numbers;
  auto& tags = data->features.at("tag").strings;
  nlohmann::json body{{"instances", nlohmann::json::array()}};
  for (size_t i = 0; i < 3; ++i)
    body["instances"].push_back({{"xy", {xy[2 * i], xy[2 * i + 1]}}, {"tag", tags[i]}});
  auto call = [&](const std::string& method, const std::string& target, const std::string& token,
                  const std::string& text) {
    return test::http_exchange(server.port(), test::http_request_text(method, target, token, text));
  };
  auto answer = call("POST", "/v1/models/blobs:predict", "tok-alice", body.dump());
  ASSERT_EQ(test::http_status(answer), 200u) << answer;
  auto json = nlohmann::json::parse(answer.substr(answer.find("\r\n\r\n") + 4));
  EXPECT_EQ(json["model"], "blobs");
  EXPECT_EQ(json["version"], "1");
  ASSERT_EQ(json["predictions"].size(), 3u);
  for (Eigen::Index r = 0; r < 3; ++r)
    for (Eigen::Index c = 0; c < 3; ++c)
      EXPECT_EQ(json["predictions"][r][c].get<float>(), (*expected)(r, c)) << r << "," << c;

  struct {
    const char* what;
    std::string method, target, token, body;
    unsigned expected;
  } cases[] = {
    {"its description", "GET", "/v1/models/blobs", "tok-alice", "", 200},
    {"listed among the models", "GET", "/v1/models", "tok-alice", "", 200},
    {"no token", "POST", "/v1/models/blobs:predict", "", body.dump(), 401},
    {"a principal outside the ACL", "POST", "/v1/models/blobs:predict", "tok-mallory", body.dump(),
     403},
    {"an unknown verb", "POST", "/v1/models/blobs:topk", "tok-alice", body.dump(), 404},
    {"GET on predict", "GET", "/v1/models/blobs:predict", "tok-alice", "", 405},
    {"a malformed body", "POST", "/v1/models/blobs:predict", "tok-alice", "{", 400},
    {"a feature the model lacks", "POST", "/v1/models/blobs:predict", "tok-alice",
     R"({"instances": [{"tag": "tag1"}]})", 400},
  };
  for (auto& c : cases)
    EXPECT_EQ(test::http_status(call(c.method, c.target, c.token, c.body)), c.expected) << c.what;
  auto list = call("GET", "/v1/models", "tok-alice", "");
  EXPECT_NE(list.find(R"("kind":"estimator")"), std::string::npos) << list;
}

TEST(estimator_model,
     a_sync_brings_its_embeddings_and_dense_weights_to_the_training_run_and_needs_manage) {
  test::temp_dir dir{"estimator_sync"};
  trained_words w;
  ASSERT_NO_FATAL_FAILURE(w.start(dir.path()));
  auto& e = *w.e;
  auto& sync_dir = w.sync_dir;
  ASSERT_NO_FATAL_FAILURE(w.save(1));
  ASSERT_NO_FATAL_FAILURE(w.train(60));
  ASSERT_NO_FATAL_FAILURE(w.save(2));

  auto config = parse_serve_config(alice_manages_words, "test.toml");
  ASSERT_TRUE(config) << render(config.error());
  front_end server{*config, "words", dir.path() + "/words"};
  ASSERT_TRUE(server.ready());
  auto call = [&](const std::string& target, const std::string& token, const std::string& text) {
    auto answer =
      test::http_exchange(server.port(), test::http_request_text("POST", target, token, text));
    auto json = nlohmann::json::parse(answer.substr(answer.find("\r\n\r\n") + 4), nullptr, false);
    return std::pair{test::http_status(answer), json};
  };
  auto body = R"({"instances": [{"x": 0.3, "words": ["w0", "common"]},
                               {"x": 0.3, "words": ["w1", "common"]}]})";
  auto predictions = [&] { return call("/v1/models/words:predict", "tok-bob", body); };
  auto sync_body = nlohmann::json{{"dir", sync_dir}}.dump();
  // The same export following the same chain directly: what the served model must answer.
  auto reference = ops::estimator::exported_model::load(dir.path() + "/words");
  ASSERT_TRUE(reference);
  ops::estimator::batch b;
  b.features["x"] = ce::feature_value::numeric(std::vector<double>{0.3, 0.3});
  b.features["words"] = ce::feature_value::categorical({{"w0", "common"}, {"w1", "common"}});
  auto expect_reference = [&](const nlohmann::json& got) {
    auto want = (*reference)->predict(b);
    ASSERT_TRUE(want) << render(want.error());
    for (Eigen::Index r = 0; r < 2; ++r)
      EXPECT_EQ(got["predictions"][r][0].get<float>(), (*want)(r, 0)) << r;
  };

  auto [before_status, before] = predictions();
  ASSERT_EQ(before_status, 200u) << before.dump();
  EXPECT_EQ(call("/v1/models/words:sync", "tok-bob", sync_body).first, 403u) << "no manage";
  EXPECT_EQ(call("/v1/models/words:sync", "tok-alice", "{}").first, 400u);
  auto [status, first] = call("/v1/models/words:sync", "tok-alice", sync_body);
  ASSERT_EQ(status, 200u) << first.dump();
  EXPECT_TRUE(first["sync"]["restored"].get<bool>()) << "the export's own snapshot is no link";
  EXPECT_EQ(first["sync"]["applied"], 2) << first.dump();
  EXPECT_EQ(first["sync"]["step"], 2);
  ASSERT_TRUE((*reference)->follow(sync_dir));
  auto [after_status, after] = predictions();
  ASSERT_EQ(after_status, 200u);
  EXPECT_NE(after["predictions"], before["predictions"]) << "the rows trained on since";
  expect_reference(after);
  EXPECT_FALSE(before.contains("sync")) << "no sync applied yet";
  EXPECT_EQ(after["sync"]["step"], 2) << "an answer names the sync it holds";
  EXPECT_EQ(after["sync"]["dense_step"], -1) << "the export's dense weights";

  ASSERT_NO_FATAL_FAILURE(w.train(90));
  ASSERT_NO_FATAL_FAILURE(w.save(3));
  auto [again_status, again] = call("/v1/models/words:sync", "tok-alice", sync_body);
  ASSERT_EQ(again_status, 200u) << again.dump();
  EXPECT_FALSE(again["sync"]["restored"].get<bool>()) << "one delta applied on the rows held";
  EXPECT_EQ(again["sync"]["applied"], 1);
  ASSERT_TRUE((*reference)->follow(sync_dir));
  expect_reference(predictions().second);
  auto described = test::http_exchange(
    server.port(), test::http_request_text("GET", "/v1/models/words", "tok-bob", ""));
  EXPECT_NE(described.find(R"("step":3)"), std::string::npos) << described;

  // With the dense weights synced too, the served model is the live estimator.
  auto live = [&] {
    auto t = std::make_shared<ops::estimator::example_table>();
    t->features = b.features;
    t->labels = ops::estimator::matrix::Zero(2, 1);
    auto p = e.predict(
      [t] { return ops::estimator::make_dataset(t, {.batch_size = 16, .shuffle = false}); });
    EXPECT_TRUE(p) << render(p.error());
    return p ? *p : ops::estimator::matrix{};
  };
  ASSERT_NO_FATAL_FAILURE(w.train(120));
  ASSERT_NO_FATAL_FAILURE(w.save(4));
  ASSERT_FALSE(call("/v1/models/words:sync", "tok-alice", sync_body).first != 200u);
  auto rows_only = predictions().second;
  EXPECT_GT(std::abs(rows_only["predictions"][0][0].get<float>() - live()(0, 0)), 1e-4)
    << "the rows alone leave the export's dense weights";
  ASSERT_FALSE(write_dense_sync(e, sync_dir, 4));
  auto [dense_status, dense] = call("/v1/models/words:sync", "tok-alice", sync_body);
  ASSERT_EQ(dense_status, 200u) << dense.dump();
  EXPECT_EQ(dense["sync"]["applied"], 0) << "no new rows";
  EXPECT_EQ(dense["sync"]["dense_step"], 4);
  auto synced = predictions().second;
  EXPECT_EQ(synced["sync"]["dense_step"], 4);
  auto want = live();
  for (Eigen::Index r = 0; r < 2; ++r)
    EXPECT_NEAR(synced["predictions"][r][0].get<float>(), want(r, 0), 1e-6) << r;
}

TEST(estimator_model,
     syncs_pushed_as_messages_reach_a_model_that_cannot_read_the_folder_and_a_lost_one_heals) {
  test::temp_dir dir{"estimator_wire_sync"};
  trained_words w;
  ASSERT_NO_FATAL_FAILURE(w.start(dir.path()));
  auto& e = *w.e;
  auto config = parse_serve_config(alice_manages_words, "test.toml");
  ASSERT_TRUE(config) << render(config.error());
  front_end server{*config, "words", dir.path() + "/words"};
  ASSERT_TRUE(server.ready());
  auto url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/models/words";
  ops::online::push_target alice{url, "tok-alice"}, bob{url, "tok-bob"};
  auto& sync_dir = w.sync_dir;
  auto hidden = dir.path() + "/hidden";
  auto body = R"({"instances": [{"x": 0.3, "words": ["w0", "common"]},
                               {"x": 0.3, "words": ["w1", "common"]}]})";
  auto described = [&] {
    auto answer = test::http_exchange(
      server.port(), test::http_request_text("GET", "/v1/models/words", "tok-bob", ""));
    return nlohmann::json::parse(test::http_body(answer));
  };
  // What the model answers with the training run's folder out of its reach, against the same
  // export following that folder directly.
  auto expect_following = [&](const std::string& why) {
    std::filesystem::rename(sync_dir, hidden);
    auto answer = test::http_exchange(
      server.port(), test::http_request_text("POST", "/v1/models/words:predict", "tok-bob", body));
    auto got = nlohmann::json::parse(test::http_body(answer));
    auto reference = ops::estimator::exported_model::load(dir.path() + "/words");
    ASSERT_TRUE(reference);
    ASSERT_TRUE((*reference)->follow(hidden));
    ops::estimator::batch b;
    b.features["x"] = ce::feature_value::numeric(std::vector<double>{0.3, 0.3});
    b.features["words"] = ce::feature_value::categorical({{"w0", "common"}, {"w1", "common"}});
    auto want = (*reference)->predict(b);
    ASSERT_TRUE(want);
    for (Eigen::Index r = 0; r < 2; ++r)
      EXPECT_EQ(got["predictions"][r][0].get<float>(), (*want)(r, 0)) << why << " " << r;
    std::filesystem::rename(hidden, sync_dir);
  };
  auto save_next = [&](int64_t step) {
    ASSERT_NO_FATAL_FAILURE(w.train(20 * (step + 1)));
    ASSERT_NO_FATAL_FAILURE(w.save(step, 10));
  };

  save_next(1);
  ops::online::push_cursor cursor;
  EXPECT_EQ(ops::online::push_sync(bob, sync_dir, cursor).status, 403u) << "no manage";
  EXPECT_EQ(cursor.rows, "") << "a refused push moves nothing";
  auto post = [&](const std::string& bytes) {
    return test::http_status(test::http_exchange(
      server.port(), test::http_request_text("POST", "/v1/models/words:sync", "tok-alice", bytes,
                                             "application/octet-stream")));
  };
  auto empty = ops::online::encode({});
  ASSERT_TRUE(empty);
  EXPECT_EQ(post(*empty), 409u) << "a model that holds no link asks for the chain";
  EXPECT_EQ(post(empty->substr(0, empty->size() - 1)), 400u) << "a message cut short";
  auto first = ops::online::push_sync(alice, sync_dir, cursor);
  ASSERT_EQ(first.status, 200u);
  EXPECT_TRUE(first.whole_chain);
  EXPECT_GT(first.bytes, 0u);
  expect_following("the first sync");
  EXPECT_EQ(described()["sync"]["restores"], 1);

  save_next(2);
  auto delta = ops::online::push_sync(alice, sync_dir, cursor);
  ASSERT_EQ(delta.status, 200u);
  EXPECT_FALSE(delta.whole_chain) << "one delta on the link held";
  expect_following("a delta");
  auto held = cursor.rows;

  // A push lost on the way: the next one's delta does not apply on the link the model holds.
  save_next(3);
  auto lost = ops::online::read_sync(sync_dir, held, "");
  ASSERT_TRUE(lost);
  cursor.rows = lost->rows.back().manifest.checkpoint;
  save_next(4);
  auto healed = ops::online::push_sync(alice, sync_dir, cursor);
  ASSERT_EQ(healed.status, 200u);
  EXPECT_TRUE(healed.whole_chain) << "the model answered 409, and got the chain";
  expect_following("after a lost delta");
  auto state = described();
  EXPECT_EQ(state["sync"]["step"], 4);
  EXPECT_EQ(state["sync"]["restores"], 1) << "it held a link of the chain: the two it lacked "
                                             "were applied, no restore";

  // A sync of another table layout is refused, and the model keeps its rows.
  save_next(5);
  auto other = ops::online::read_sync(sync_dir, cursor.rows, "");
  ASSERT_TRUE(other && !other->rows.empty());
  other->rows[0].manifest.embeddings[0].config.dim += 1;
  auto other_body = ops::online::encode(*other);
  ASSERT_TRUE(other_body);
  auto refused = test::http_exchange(
    server.port(), test::http_request_text("POST", "/v1/models/words:sync", "tok-alice",
                                           *other_body, "application/octet-stream"));
  EXPECT_EQ(test::http_status(refused), 400u) << refused;
  EXPECT_NE(refused.find("another model or table layout"), std::string::npos) << refused;
  EXPECT_EQ(described()["sync"]["step"], 4);

  // The dense weights travel too: the served model is then the live estimator.
  ASSERT_FALSE(write_dense_sync(e, sync_dir, 5));
  auto dense = ops::online::push_sync(alice, sync_dir, cursor);
  ASSERT_EQ(dense.status, 200u);
  EXPECT_FALSE(dense.whole_chain);
  EXPECT_EQ(described()["sync"]["dense_step"], 5);
  expect_following("with the dense weights");
}

TEST(estimator_model, a_sync_that_failed_is_applied_by_mend_with_no_push_after_it) {
  test::temp_dir dir{"estimator_mend"};
  trained_words w;
  ASSERT_NO_FATAL_FAILURE(w.start(dir.path()));
  auto& sync_dir = w.sync_dir;
  ASSERT_NO_FATAL_FAILURE(w.save(1));
  auto config = parse_serve_config(alice_manages_words, "test.toml");
  ASSERT_TRUE(config) << render(config.error());
  // No mending thread: mend() runs when the test calls it.
  auto model = estimator_model::load(dir.path() + "/words", config->rules_of("words"), {}, {}, {},
                                     std::chrono::milliseconds{0});
  ASSERT_TRUE(model) << render(model.error());
  request_context alice;
  alice.principal = "alice";
  auto sync_body = nlohmann::json{{"dir", sync_dir}}.dump();
  auto step = [&] {
    auto j = nlohmann::json::parse((*model)->describe("words"));
    return j.contains("sync") ? j["sync"]["step"].get<int64_t>() : int64_t{-1};
  };
  EXPECT_FALSE((*model)->mend()) << "no sync yet: nothing to mend";
  ASSERT_TRUE((*model)->sync("words", sync_body, alice));
  EXPECT_EQ(step(), 1);
  EXPECT_FALSE((*model)->mend()) << "the sync applied, every copy in service";

  // The next sync's delta is out of reach when it is pushed: the push fails, and the model
  // keeps the rows of step 1 until mend() finds the delta.
  ASSERT_NO_FATAL_FAILURE(w.train(60));
  ASSERT_NO_FATAL_FAILURE(w.save(2));
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  ASSERT_TRUE(head);
  auto delta = sync_dir + "/" + head->checkpoint;
  ASSERT_TRUE(std::filesystem::is_directory(delta)) << delta;
  std::filesystem::rename(delta, delta + ".away");
  EXPECT_FALSE((*model)->sync("words", sync_body, alice));
  EXPECT_EQ(step(), 1);
  EXPECT_TRUE((*model)->mend()) << "the delta is still away";
  EXPECT_EQ(step(), 1);
  std::filesystem::rename(delta + ".away", delta);
  EXPECT_FALSE((*model)->mend()) << "applied: nothing left";
  EXPECT_EQ(step(), 2);

  auto reference = ops::estimator::exported_model::load(dir.path() + "/words");
  ASSERT_TRUE(reference);
  ASSERT_TRUE((*reference)->follow(sync_dir));
  auto body = R"({"instances": [{"x": 0.3, "words": ["w0", "common"]}]})";
  auto got = (*model)->predict("words", body, alice, 60000);
  ASSERT_TRUE(got) << render(got.error());
  ops::estimator::batch b;
  b.features["x"] = ce::feature_value::numeric(std::vector<double>{0.3});
  b.features["words"] = ce::feature_value::categorical({{"w0", "common"}});
  auto want = (*reference)->predict(b);
  ASSERT_TRUE(want);
  EXPECT_EQ(nlohmann::json::parse(*got)["predictions"][0][0].get<float>(), (*want)(0, 0));
}

} // namespace
} // namespace darcy::serving
