#include "actors/serving/serving_root.hpp"

#include <atomic>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "actors/serving/serving_shard.hpp"
#include "compute/wals_math.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/recorded_shards.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

constexpr uint32_t shards = 3;
constexpr size_t items = 600;
constexpr uint32_t dim = 8;

/// Shard 1 behind a chaos gate that delays every message to it.
caf::behavior slow_shard(caf::stateful_actor<runtime::chaos_gate_state>* self,
                         serving_shard_config config) {
  auto shard = self->system().spawn(serving_shard, config);
  disruption plan;
  if (config.shard == 1)
    plan = {0, 1.0, 1500, 1};
  return runtime::chaos_gate(self, caf::actor_cast<caf::actor>(shard), plan);
}

/// Guards held_shards.
std::mutex started_mutex;

/// A shard server that holds every topk until it receives ok_atom, then passes them on in
/// order: the root queues what arrives meanwhile.
struct held_shard_state {
  caf::actor target;
  bool open = false;
  std::vector<std::pair<caf::response_promise, caf::message>> held;
};

std::vector<caf::actor> held_shards;

caf::behavior held_shard(caf::stateful_actor<held_shard_state>* self, serving_shard_config config) {
  self->state.target = caf::actor_cast<caf::actor>(self->system().spawn(serving_shard, config));
  self->link_to(self->state.target);
  {
    std::lock_guard<std::mutex> guard{started_mutex};
    held_shards.push_back(caf::actor_cast<caf::actor>(self));
  }
  self->set_default_handler(
    [self](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
      auto& st = self->state;
      auto promise = self->make_response_promise();
      auto content = view.move_content_to_message();
      if (st.open || !content.match_element<topk_atom>(0))
        promise.delegate(st.target, std::move(content));
      else
        st.held.emplace_back(std::move(promise), std::move(content));
      return caf::delegated<caf::message>{};
    });
  return {
    [self](ok_atom) {
      auto& st = self->state;
      st.open = true;
      for (auto& [promise, content] : st.held)
        promise.delegate(st.target, std::move(content));
      st.held.clear();
    },
  };
}

/// Shard 1 loses the first topk it receives: no answer ever comes (a message lost between
/// nodes). Every other message passes.
struct lossy_shard_state {
  caf::actor target;
  bool lost_one = false;
  std::vector<caf::response_promise> lost;
};

caf::behavior lossy_shard(caf::stateful_actor<lossy_shard_state>* self,
                          serving_shard_config config) {
  auto shard = config.shard;
  self->state.target = caf::actor_cast<caf::actor>(self->system().spawn(serving_shard, config));
  self->link_to(self->state.target);
  self->set_default_handler(
    [self, shard](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
      auto& st = self->state;
      auto promise = self->make_response_promise();
      auto content = view.move_content_to_message();
      if (shard == 1 && !st.lost_one && content.match_element<topk_atom>(0)) {
        st.lost_one = true;
        st.lost.push_back(std::move(promise));
      } else {
        promise.delegate(st.target, std::move(content));
      }
      return caf::delegated<caf::message>{};
    });
  return {[](ok_atom) {}};
}

struct serving_test_config : test::test_config {
  serving_test_config() {
    register_actor_types(*this);
    add_actor_type("test.slow_shard", slow_shard);
    add_actor_type("test.recorded_shard", test::recorded_shard);
    add_actor_type("test.held_shard", held_shard);
    add_actor_type("test.lossy_shard", lossy_shard);
  }
};

stores::export_input test_input(uint64_t seed) {
  stores::export_input in;
  in.config.shards = shards;
  in.config.lambda = 0.1;
  in.config.sigma = 0.5;
  in.config.alpha = 2;
  in.items = test::gaussian_matrix(items, dim, seed);
  in.users = test::gaussian_matrix(40, dim, seed + 1);
  for (size_t u = 0; u < 40; ++u)
    in.user_names.push_back("user-" + std::to_string(u));
  for (size_t i = 0; i < items; ++i)
    in.item_names.push_back("item-" + std::to_string(i));
  in.index = {.lists = 6, .seed = 3};
  return in;
}

request_context as_principal(std::string principal) {
  request_context ctx;
  ctx.principal = std::move(principal);
  ctx.app = "test";
  ctx.trace_id = "t";
  return ctx;
}

topk_request vector_query(std::vector<float> v, uint32_t k = 10) {
  topk_request r;
  r.context = as_principal("alice");
  r.kind = query_kind::vector;
  r.vector = std::move(v);
  r.k = k;
  return r;
}

/// The k best items of `q` over all items, best first, ties by id.
std::vector<uint64_t> brute_force(const compute::row_matrix& all, const std::vector<float>& q,
                                  size_t k) {
  std::vector<std::pair<float, uint64_t>> scored;
  for (Eigen::Index i = 0; i < all.rows(); ++i) {
    float s = 0;
    for (uint32_t d = 0; d < dim; ++d)
      s += all(i, d) * q[d];
    scored.push_back({-s, static_cast<uint64_t>(i)});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<uint64_t> ids;
  for (size_t j = 0; j < k; ++j)
    ids.push_back(scored[j].second);
  return ids;
}

class serving_root_test : public ::testing::Test {
protected:
  serving_root_test() : sys{cfg}, self{sys}, tmp{"serving_root"} {
    sys.await_actors_before_shutdown(false);
    model_dir = tmp.path() + "/m";
  }

  void export_version(uint64_t seed) {
    auto v = stores::write_export(model_dir, test_input(seed), 3);
    ASSERT_TRUE(v) << render(v.error());
  }

  serving_root_actor start_root(std::string factory = "darcy.serving_shard",
                                access_rules rules = {}, uint32_t batches_in_flight = 1,
                                uint32_t batch_limit = 64, uint32_t attempt_ms = 0) {
    serving_root_config c;
    c.shard_attempt_ms = attempt_ms;
    c.shard_batches_in_flight = batches_in_flight;
    c.shard_batch_limit = batch_limit;
    c.model = "m";
    c.model_dir = model_dir;
    c.shard_factory = std::move(factory);
    // Every list, and every item of a shard re-ranked: exact answers.
    c.probes = 64;
    c.rerank = items;
    c.access = std::move(rules);
    c.load_newest = false;
    auto root = sys.spawn(serving_root, c);
    guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(root)));
    return root;
  }

  caf::expected<std::string> load(const serving_root_actor& root, const std::string& version,
                                  const std::string& principal = "alice") {
    return runtime::remote_run<std::string>(sys, root, request_context{}, "root", load_atom::value,
                                            as_principal(principal), version);
  }

  caf::expected<topk_response> topk(const serving_root_actor& root, const topk_request& r) {
    return runtime::remote_run<topk_response>(sys, root, request_context{}, "root",
                                              topk_atom::value, r);
  }

  model_status status(const serving_root_actor& root) {
    auto s =
      runtime::remote_run<model_status>(sys, root, request_context{}, "root", status_atom::value);
    EXPECT_TRUE(s) << render(error_of(s));
    return s ? *s : model_status{};
  }

  serving_test_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  test::temp_dir tmp;
  std::string model_dir;
  std::vector<std::unique_ptr<test::stop_on_exit>> guards;
};

TEST_F(serving_root_test, answers_equal_brute_force_over_all_items) {
  export_version(1);
  auto root = start_root();
  ASSERT_EQ(load(root, ""), caf::expected<std::string>{"1"});
  auto in = test_input(1);
  // A vector, a known user, and a new user projected from three items.
  auto q = test::gaussian_matrix(1, dim, 9);
  auto by_vector = topk(root, vector_query({q.data(), q.data() + dim}));
  ASSERT_TRUE(by_vector) << render(by_vector.error());
  EXPECT_EQ(by_vector->ids, brute_force(in.items, {q.data(), q.data() + dim}, 10));
  EXPECT_EQ(by_vector->names.front(), "item-" + std::to_string(by_vector->ids.front()));
  EXPECT_FALSE(by_vector->partial);
  EXPECT_EQ(by_vector->version, "1");

  auto user = vector_query({});
  user.kind = query_kind::user;
  user.user = "user-7";
  auto by_user = topk(root, user);
  ASSERT_TRUE(by_user) << render(by_user.error());
  std::vector<float> u7(in.users.row(7).data(), in.users.row(7).data() + dim);
  EXPECT_EQ(by_user->ids, brute_force(in.items, u7, 10));

  auto fresh = vector_query({});
  fresh.kind = query_kind::items;
  fresh.items = {"item-3", "item-50", "no-such-item", "item-411"};
  auto by_items = topk(root, fresh);
  ASSERT_TRUE(by_items) << render(by_items.error());
  compute::row_matrix gram = in.items.transpose() * in.items;
  wals_params p;
  p.dim = dim;
  p.lambda = 0.1f;
  p.sigma = 0.5f;
  p.alpha = 2;
  std::vector<uint32_t> ids{3, 50, 411};
  std::vector<float> ones(3, 1.0f);
  auto projected = compute::project({in.items.data(), items, dim},
                                    {gram.data(), static_cast<size_t>(gram.size())}, ids, ones, p);
  ASSERT_TRUE(projected);
  EXPECT_EQ(by_items->ids, brute_force(in.items, *projected, 10));
}

TEST_F(serving_root_test, queries_that_wait_for_a_shard_leave_in_batches_and_answer_alike) {
  export_version(1);
  auto in = test_input(1);
  constexpr size_t requests = 30;
  struct {
    uint32_t in_flight;
    uint32_t limit;
    uint64_t batches; // per shard: the first query(s) alone, then the queued ones by the limit
  } cases[] = {{0, 64, 0}, {1, 64, 2}, {1, 5, 7}, {2, 64, 3}, {2, 4, 9}};
  for (auto& c : cases) {
    SCOPED_TRACE("in flight " + std::to_string(c.in_flight) + ", limit " + std::to_string(c.limit));
    {
      std::lock_guard<std::mutex> guard{started_mutex};
      held_shards.clear();
    }
    auto root = start_root("test.held_shard", {}, c.in_flight, c.limit);
    ASSERT_TRUE(load(root, "1"));
    auto queries = test::gaussian_matrix(requests, dim, 17);
    std::vector<caf::response_handle<caf::blocking_actor, caf::message, true>> answers;
    for (size_t r = 0; r < requests; ++r) {
      std::vector<float> q(queries.row(static_cast<Eigen::Index>(r)).data(),
                           queries.row(static_cast<Eigen::Index>(r)).data() + dim);
      answers.push_back(self->request(caf::actor_cast<caf::actor>(root), caf::infinite,
                                      topk_atom::value, vector_query(q)));
    }
    // The root handles its mailbox in order: once status answers, every query has reached the
    // shards or waits for them.
    auto before = status(root);
    for (auto& h : before.shards)
      EXPECT_EQ(h.answered, 0u);
    {
      std::lock_guard<std::mutex> guard{started_mutex};
      ASSERT_EQ(held_shards.size(), shards);
      for (auto& shard : held_shards)
        self->send(shard, ok_atom::value);
    }
    for (size_t r = 0; r < requests; ++r) {
      std::vector<float> q(queries.row(static_cast<Eigen::Index>(r)).data(),
                           queries.row(static_cast<Eigen::Index>(r)).data() + dim);
      answers[r].receive(
        [&](const topk_response& got) { EXPECT_EQ(got.ids, brute_force(in.items, q, 10)) << r; },
        [&](const caf::error& err) { ADD_FAILURE() << r << ": " << render(err); });
    }
    for (auto& h : status(root).shards) {
      EXPECT_EQ(h.answered, requests) << "shard " << h.shard;
      EXPECT_EQ(h.batches, c.batches) << "shard " << h.shard;
    }
    self->send_exit(root, caf::exit_reason::user_shutdown);
  }
}

TEST_F(serving_root_test, bad_requests_are_refused_with_their_own_error) {
  export_version(1);
  auto root = start_root();
  ASSERT_TRUE(load(root, ""));
  auto nan = vector_query(std::vector<float>(dim, 0.5f));
  nan.vector[3] = std::nanf("");
  auto user = vector_query({});
  user.kind = query_kind::user;
  user.user = "nobody";
  auto unknown_items = vector_query({});
  unknown_items.kind = query_kind::items;
  unknown_items.items = {"x", "y"};
  auto mismatched_values = unknown_items;
  mismatched_values.items = {"item-1"};
  mismatched_values.values = {1, 2};
  struct {
    const char* name;
    topk_request request;
    errc expected;
  } cases[] = {
    {"short vector", vector_query(std::vector<float>(dim - 1, 1.0f)), errc::dimension_mismatch},
    {"NaN", nan, errc::invalid_argument},
    {"k of 0", vector_query(std::vector<float>(dim, 1.0f), 0), errc::invalid_argument},
    {"k above the items", vector_query(std::vector<float>(dim, 1.0f), items + 1),
     errc::invalid_argument},
    {"unknown user", user, errc::not_found},
    {"only unknown items", unknown_items, errc::not_found},
    {"values of another count", mismatched_values, errc::invalid_argument},
  };
  for (auto& c : cases) {
    auto r = topk(root, c.request);
    EXPECT_TRUE(!r && is(r.error(), c.expected)) << c.name << ": " << render(error_of(r));
  }
  EXPECT_TRUE(is(error_of(load(root, "42")), errc::not_found));
}

TEST_F(serving_root_test, the_root_is_unavailable_until_every_shard_has_loaded) {
  // Version 1's shard 2 is damaged: its server never loads, so the root never loads either.
  export_version(1);
  std::filesystem::resize_file(model_dir + "/1/shard-2/codes.u8", 10);
  auto root = start_root();
  auto failed = load(root, "1");
  ASSERT_FALSE(failed);
  EXPECT_TRUE(is(failed.error(), errc::spawn_failed)) << render(failed.error());
  auto s = status(root);
  EXPECT_EQ(s.state, model_state::unavailable);
  EXPECT_NE(s.last_error, "");
  auto refused = topk(root, vector_query(std::vector<float>(dim, 1.0f)));
  EXPECT_TRUE(!refused && is(refused.error(), errc::unavailable));
  for (auto& e : s.events)
    EXPECT_EQ(e.find("root of version 1 loaded"), std::string::npos) << e;

  // Version 2 loads in order: every shard, then the root; only then does it serve.
  export_version(2);
  ASSERT_EQ(load(root, "2"), caf::expected<std::string>{"2"});
  s = status(root);
  EXPECT_EQ(s.state, model_state::available);
  EXPECT_EQ(s.version, "2");
  std::vector<size_t> shard_loaded;
  size_t root_loaded = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    if (s.events[i].find("of version 2 loaded on") != std::string::npos)
      shard_loaded.push_back(i);
    if (s.events[i].find("root of version 2 loaded") != std::string::npos)
      root_loaded = i;
  }
  ASSERT_EQ(shard_loaded.size(), shards);
  for (auto i : shard_loaded)
    EXPECT_LT(i, root_loaded);
  EXPECT_TRUE(topk(root, vector_query(std::vector<float>(dim, 1.0f))));
}

TEST_F(serving_root_test, a_hot_swap_under_a_client_loop_fails_no_request) {
  export_version(1);
  export_version(2);
  auto root = start_root();
  ASSERT_EQ(load(root, "1"), caf::expected<std::string>{"1"});
  std::atomic<bool> loaded{false};
  caf::expected<std::string> swapped{caf::error{}};
  std::thread manager{[&] {
    swapped = load(root, "2");
    loaded = true;
  }};
  size_t answered = 0;
  size_t failures = 0;
  size_t after_swap = 0;
  std::set<std::string> versions;
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  while (after_swap < 50 && std::chrono::steady_clock::now() < deadline) {
    auto q = vector_query(std::vector<float>(dim, 0.25f));
    q.context.deadline_us = deadline_in(std::chrono::seconds(10));
    auto r = topk(root, q);
    if (!r) {
      ++failures;
      ADD_FAILURE() << render(r.error());
      continue;
    }
    ++answered;
    versions.insert(r->version);
    if (loaded && r->version == "2")
      ++after_swap;
  }
  manager.join();
  ASSERT_TRUE(swapped) << render(swapped.error());
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(after_swap, 50u);
  EXPECT_TRUE(versions.count("1") == 1 && versions.count("2") == 1) << answered;
  auto s = status(root);
  EXPECT_NE(std::find(s.events.begin(), s.events.end(), "version 1 unloaded"), s.events.end());
}

TEST_F(serving_root_test, a_shard_past_the_deadline_gives_a_flagged_partial_answer_or_an_error) {
  export_version(1);
  auto root = start_root("test.slow_shard");
  ASSERT_TRUE(load(root, "1"));
  auto q = vector_query(std::vector<float>(dim, 1.0f));
  q.context.deadline_us = deadline_in(std::chrono::milliseconds(100));
  q.allow_partial = true;
  auto partial = topk(root, q);
  ASSERT_TRUE(partial) << render(partial.error());
  EXPECT_TRUE(partial->partial);
  EXPECT_EQ(partial->missing_shards, std::vector<uint32_t>{1});
  EXPECT_EQ(partial->ids.size(), 10u);
  for (auto id : partial->ids)
    EXPECT_NE(id % shards, 1u) << id;

  q.context.deadline_us = deadline_in(std::chrono::milliseconds(100));
  q.allow_partial = false;
  auto refused = topk(root, q);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::deadline_exceeded)) << render(refused.error());
  EXPECT_NE(render(refused.error()).find("shards 1 missing"), std::string::npos)
    << render(refused.error());
}

TEST_F(serving_root_test, a_lost_shard_batch_is_sent_again_and_the_answer_is_whole) {
  export_version(1);
  auto all = test_input(1).items;
  // batches_in_flight 1 and 0 (one message per query): both ask again.
  for (uint32_t batches : {1u, 0u}) {
    SCOPED_TRACE(batches);
    auto root = start_root("test.lossy_shard", {}, batches, 64, 20);
    ASSERT_TRUE(load(root, "1"));
    std::vector<float> v{0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 0};
    auto q = vector_query(v);
    q.context.deadline_us = deadline_in(std::chrono::seconds(60));
    auto answer = topk(root, q);
    ASSERT_TRUE(answer) << render(answer.error());
    EXPECT_FALSE(answer->partial);
    EXPECT_EQ(answer->ids, brute_force(all, v, 10));
    auto s = status(root);
    ASSERT_EQ(s.shards.size(), shards);
    EXPECT_EQ(s.shards[1].resent, 1u);
    EXPECT_EQ(s.shards[0].resent, 0u);
    EXPECT_EQ(s.shards[1].failed, 0u);
  }
}

TEST_F(serving_root_test, a_lost_shard_batch_asked_once_fails_at_the_deadline) {
  export_version(1);
  auto root = start_root("test.lossy_shard");
  ASSERT_TRUE(load(root, "1"));
  auto q = vector_query(std::vector<float>(dim, 1.0f));
  q.context.deadline_us = deadline_in(std::chrono::milliseconds(200));
  auto refused = topk(root, q);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::deadline_exceeded)) << render(refused.error());
  EXPECT_EQ(status(root).shards[1].resent, 0u);
}

TEST_F(serving_root_test, a_killed_shard_server_is_restarted_from_the_export_and_answers) {
  export_version(1);
  test::forget_recorded_shards();
  auto root = start_root("test.recorded_shard");
  ASSERT_TRUE(load(root, "1"));
  auto started = test::recorded_shard_servers();
  ASSERT_EQ(started.size(), shards);
  auto victim = started[0];
  self->send_exit(victim, caf::exit_reason::kill);
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  model_status s;
  do {
    std::this_thread::yield();
    s = status(root);
  } while ((s.shards.empty() || s.shards[0].restarts == 0 || !s.shards[0].up) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(s.shards[0].restarts, 1u);
  auto r = topk(root, vector_query(std::vector<float>(dim, 1.0f)));
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_FALSE(r->partial);
  EXPECT_EQ(r->ids, brute_force(test_input(1).items, std::vector<float>(dim, 1.0f), 10));
}

TEST_F(serving_root_test, acl_and_quota_denials_are_distinct_errors_and_counted) {
  export_version(1);
  access_rules rules;
  rules.acl.query = {"alice", "bob"};
  rules.acl.manage = {"alice"};
  rules.quotas = {{"bob", "*", 0.001, 1}};
  auto root = start_root("darcy.serving_shard", rules);
  EXPECT_TRUE(is(error_of(load(root, "1", "bob")), errc::access_denied));
  ASSERT_TRUE(load(root, "1", "alice"));
  auto q = vector_query(std::vector<float>(dim, 1.0f));
  q.context = as_principal("mallory");
  EXPECT_TRUE(is(error_of(topk(root, q)), errc::access_denied));
  q.context = as_principal("bob");
  EXPECT_TRUE(topk(root, q));
  EXPECT_TRUE(is(error_of(topk(root, q)), errc::quota_exceeded));
  auto s = status(root);
  std::map<std::string, principal_counters> by_name;
  for (auto& p : s.principals)
    by_name[p.principal] = p;
  EXPECT_EQ(by_name["bob"].requests, 1u);
  EXPECT_EQ(by_name["bob"].rows, 10u);
  EXPECT_EQ(by_name["bob"].denied_quota, 1u);
  EXPECT_EQ(by_name["bob"].denied_access, 1u);
  EXPECT_EQ(by_name["mallory"].denied_access, 1u);
  EXPECT_EQ(by_name["alice"].requests, 1u);
}

} // namespace
} // namespace darcy::actors
