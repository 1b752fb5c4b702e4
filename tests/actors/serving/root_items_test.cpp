#include "actors/serving/root_items.hpp"

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "actors/serving/serving_shard.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/recorded_shards.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

constexpr uint32_t shard_count = 3;
constexpr size_t item_count = 300;
constexpr uint32_t items_dim = 8;

struct items_test_config : test::test_config {
  items_test_config() {
    register_actor_types(*this);
    add_actor_type("test.recorded_shard", test::recorded_shard);
  }
};

/// A WALS export of named items and users, with two item features; by cosine, so that an
/// item's own vector finds it first.
stores::export_input items_input() {
  stores::export_input in;
  in.config.shards = shard_count;
  in.config.metric = "cosine";
  in.config.lambda = 0.1;
  in.config.sigma = 0.5;
  in.config.alpha = 2;
  in.items = test::gaussian_matrix(item_count, items_dim, 31);
  in.users = test::gaussian_matrix(20, items_dim, 32);
  for (size_t u = 0; u < 20; ++u)
    in.user_names.push_back("user-" + std::to_string(u));
  for (size_t i = 0; i < item_count; ++i)
    in.item_names.push_back("item-" + std::to_string(i));
  in.item_features = test::gaussian_matrix(2, items_dim, 33);
  in.item_feature_names = {"rock", "pop"};
  in.index = {.lists = 4, .seed = 3};
  return in;
}

class root_items_test : public ::testing::Test {
protected:
  root_items_test() : sys{cfg}, self{sys}, tmp{"root_items"} {
    sys.await_actors_before_shutdown(false);
    test::forget_recorded_shards();
    auto v = stores::write_export(tmp.path() + "/m", items_input(), 1);
    EXPECT_TRUE(v) << render(v.error());
    serving_root_config c;
    c.model = "m";
    c.model_dir = tmp.path() + "/m";
    c.shard_factory = "test.recorded_shard";
    c.probes = 64; // every list, every item re-ranked: exact answers
    c.rerank = item_count;
    c.load_newest = false;
    c.access.acl.manage = {"alice"};
    root = sys.spawn(serving_root, c);
    guard = std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(root));
    auto loaded = ask<std::string>(load_atom::value, who("alice"), std::string{});
    EXPECT_TRUE(loaded) << render(error_of(loaded));
    auto model = root_model::load(tmp.path() + "/m", "");
    EXPECT_TRUE(model) << render(error_of(model));
    if (model)
      local.emplace(std::move(*model));
  }

  static request_context who(std::string principal) {
    request_context ctx;
    ctx.principal = std::move(principal);
    return ctx;
  }

  template <class Reply, class... Ts>
  caf::expected<Reply> ask(Ts&&... xs) {
    return runtime::remote_run<Reply>(sys, root, request_context{}, "root",
                                      std::forward<Ts>(xs)...);
  }

  caf::expected<add_items_response> add(std::vector<new_item> items,
                                        std::string principal = "alice") {
    return ask<add_items_response>(add_atom::value,
                                   add_items_request{who(std::move(principal)), std::move(items)});
  }

  caf::expected<topk_response> nearest(const std::vector<float>& q, uint32_t k = 10) {
    topk_request r;
    r.kind = query_kind::vector;
    r.vector = q;
    r.k = k;
    return ask<topk_response>(topk_atom::value, r);
  }

  /// The names of the k best of the export's items (normalised, as the export keeps them) and
  /// `extra` (named, normalised by the root), by inner product.
  std::vector<std::string> exact(
    const std::vector<float>& q,
    const std::vector<std::pair<std::string, std::vector<float>>>& extra, size_t k = 10) {
    auto in = items_input();
    compute::normalise_rows(in.items);
    std::vector<std::pair<float, std::string>> scored;
    auto dot = [&](const float* x) {
      float s = 0;
      for (uint32_t d = 0; d < items_dim; ++d)
        s += x[d] * q[d];
      return s;
    };
    for (size_t i = 0; i < item_count; ++i)
      scored.push_back({-dot(in.items.row(static_cast<Eigen::Index>(i)).data()), in.item_names[i]});
    for (auto& [name, v] : extra)
      scored.push_back({-dot(v.data()), name});
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> names;
    for (size_t j = 0; j < k; ++j)
      names.push_back(scored[j].second);
    return names;
  }

  items_test_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  test::temp_dir tmp;
  serving_root_actor root;
  std::unique_ptr<test::stop_on_exit> guard;
  /// The export's root sub-model, to project the items the way the root does.
  std::optional<root_model> local;
};

TEST_F(root_items_test, AnAddedItemIsServedByNameAsSoonAsTheAddAnswers) {
  std::vector<new_item> items = {{"new-song", {"rock"}, {"user-3", "user-7"}, {}},
                                 {"other-song", {"pop"}, {}, {}}};
  auto added = add(items);
  ASSERT_TRUE(added) << render(added.error());
  EXPECT_EQ(added->ids, (std::vector<uint64_t>{item_count, item_count + 1}));
  EXPECT_EQ(added->shards,
            (std::vector<uint32_t>{item_count % shard_count, (item_count + 1) % shard_count}));
  auto first = local->project_item(items[0]);
  auto second = local->project_item(items[1]);
  ASSERT_TRUE(first && second);
  // Queries toward each new item, and one toward neither: each answer is the exact top 10 of
  // the export's items and the two new ones.
  auto away = test::gaussian_matrix(1, items_dim, 34);
  for (auto& q : {*first, *second, std::vector<float>(away.data(), away.data() + items_dim)}) {
    auto r = nearest(q);
    ASSERT_TRUE(r) << render(r.error());
    EXPECT_EQ(r->names, exact(q, {{"new-song", *first}, {"other-song", *second}}));
  }
  auto by_first = nearest(*first);
  ASSERT_TRUE(by_first);
  EXPECT_EQ(by_first->names.front(), "new-song");
}

TEST_F(root_items_test, AnAddThatCannotBeDoneIsAClearErrorAndChangesNothingServed) {
  auto q = test::gaussian_matrix(1, items_dim, 35);
  std::vector<float> query(q.data(), q.data() + items_dim);
  auto before = nearest(query);
  ASSERT_TRUE(before);
  struct bad_case {
    const char* name;
    std::vector<new_item> items;
    std::string principal;
    errc expected;
    const char* says;
  };
  const bad_case cases[] = {
    {"a name of the export",
     {{"item-5", {"rock"}, {}, {}}},
     "alice",
     errc::invalid_argument,
     "already in version"},
    {"a name given twice",
     {{"twin", {"rock"}, {}, {}}, {"twin", {"pop"}, {}, {}}},
     "alice",
     errc::invalid_argument,
     "given twice"},
    {"from nothing",
     {{"empty", {}, {}, {}}},
     "alice",
     errc::invalid_argument,
     "at least one feature or user"},
    {"nothing known",
     {{"lost", {"jazz"}, {"nobody"}, {}}},
     "alice",
     errc::not_found,
     "is known to the model"},
    {"a good item beside a bad one",
     {{"fine", {"rock"}, {}, {}}, {"lost", {"jazz"}, {}, {}}},
     "alice",
     errc::not_found,
     "new item 'lost'"},
    {"no items", {}, "alice", errc::invalid_argument, "no items"},
    {"a principal that may not manage",
     {{"fine", {"rock"}, {}, {}}},
     "mallory",
     errc::access_denied,
     ""},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = add(c.items, c.principal);
    ASSERT_FALSE(r);
    EXPECT_TRUE(is(r.error(), c.expected)) << render(r.error());
    EXPECT_NE(render(r.error()).find(c.says), std::string::npos) << render(r.error());
  }
  auto after = nearest(query);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->names, before->names);
  // The names refused are still free: "fine" is added now, with the first new id.
  auto fine = add({{"fine", {"rock"}, {}, {}}});
  ASSERT_TRUE(fine) << render(fine.error());
  EXPECT_EQ(fine->ids, std::vector<uint64_t>{item_count});
  // And taken once added.
  EXPECT_TRUE(is(error_of(add({{"fine", {"pop"}, {}, {}}})), errc::invalid_argument));
}

TEST_F(root_items_test, ARestartedShardServerGetsItsAddedItemsAgain) {
  new_item item{"new-song", {"rock"}, {"user-3"}, {}};
  auto added = add({item});
  ASSERT_TRUE(added) << render(added.error());
  auto shard = added->shards.front();
  auto started = test::recorded_shard_servers();
  ASSERT_EQ(started.size(), shard_count);
  auto victim = started[shard];
  self->send_exit(victim, caf::exit_reason::kill);
  auto vector = local->project_item(item);
  ASSERT_TRUE(vector);
  // Until the restarted server has the item again, answers lack it (or the shard).
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  caf::expected<topk_response> r = caf::error{};
  do {
    std::this_thread::yield();
    r = nearest(*vector);
  } while ((!r || r->partial ||
            std::find(r->names.begin(), r->names.end(), "new-song") == r->names.end()) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->names, exact(*vector, {{"new-song", *vector}}));
  auto s = ask<model_status>(status_atom::value);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->shards[shard].restarts, 1u);
}

} // namespace
} // namespace darcy::actors
