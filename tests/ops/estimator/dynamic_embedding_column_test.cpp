// dynamic_embedding_column: raw strings looked up in the embedding service, trained by its
// optimizer through the Estimator; checkpoints save and restore the service with the dense
// variables, so a resumed run ends exactly as an uninterrupted one.
#include "ops/estimator/dynamic_embedding_column.hpp"

#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "actors/embedding/shard_client.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/export/export.hpp"
#include "tests/support/member_sessions.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/word_model.hpp"

namespace darcy::ops::estimator {
namespace {

namespace ce = compute::estimator;
using test::column_input;
using test::model;
using test::session_config;
using test::word_config;
using test::words;

matrix rows_of(session& s, std::vector<std::string> keys) {
  auto found = dynamic_embedding_lookup(s, std::move(keys), word_config(), "words", false);
  EXPECT_TRUE(found) << render(found.error());
  return found ? found->rows : matrix{};
}

TEST(dynamic_embedding_column, the_service_trains_rows_of_raw_words_through_the_estimator) {
  auto s = session::open({});
  ASSERT_TRUE(s);
  estimator e{model(**s), session_config(**s)};
  ASSERT_TRUE(e.train(column_input(words(200), 0), 1)); // creates the rows
  auto before = rows_of(**s, {"w0", "w1"});
  auto trained = e.train(column_input(words(200), 0), 150);
  ASSERT_TRUE(trained);
  auto after = rows_of(**s, {"w0", "w1"});
  EXPECT_FALSE(before.isApprox(after)) << "the service's optimizer moved the rows";
  // The tables' time is timed apart, within the phases that hold it.
  auto& phases = trained->phase_seconds;
  EXPECT_GT(phases["forward.embedding_lookup"], 0);
  EXPECT_LE(phases["forward.embedding_lookup"], phases["forward"]);
  EXPECT_GT(phases["backward.embedding_update"], 0);
  EXPECT_LE(phases["backward.embedding_update"], phases["backward"]);
  auto m = e.evaluate(column_input(words(60), 1));
  ASSERT_TRUE(m);
  EXPECT_GT(m->at("accuracy"), 0.95);
}

/// At the end of training, sends one backward straight to the shards that they refuse (a lookup
/// handle none of them holds), as a shard that failed to apply the last step's would.
class refused_backward_at_end final : public session_run_hook {
public:
  explicit refused_backward_at_end(session& s) : s_(s) {}
  caf::error end(estimator&, uint64_t) override {
    auto client = s_.shard_client();
    if (!client)
      return make_error(errc::invalid_argument, "no shard client");
    std::vector<table_keys> tables{{"words", {}}};
    tables[0].keys.push_back("w0", compute::hash_key("w0"));
    std::vector<float> row(word_config().dim), grad(word_config().dim, 1.0f);
    auto kept = client->lookup(tables, {row}, true);
    if (!kept)
      return std::move(kept.error());
    return client->backward(*kept->route, kept->handle + 1000, {grad}, 1);
  }

private:
  session& s_;
};

// A worker trains without a model_dir, so no final save waits for its last backward passes:
// train() waits for them itself and reports one that failed, instead of leaving it to the
// session's next call (or to a log line when the session closes).
TEST(dynamic_embedding_column, a_backward_the_shards_refuse_after_the_last_step_fails_train) {
  test::on_a_member("de_column_direct", [](caf::actor_system& sys) {
    auto [owner, user] = test::owner_and_direct_user(sys);
    ASSERT_TRUE(owner && user);
    estimator e{model(*user), session_config(*user)};
    auto clean = e.train(column_input(words(64), 0), 4);
    ASSERT_TRUE(clean) << render(clean.error());
    auto r =
      e.train(column_input(words(64), 0), 8, {std::make_shared<refused_backward_at_end>(*user)});
    ASSERT_FALSE(r) << "the refused backward went unreported";
    EXPECT_TRUE(is(r.error(), errc::not_found)) << render(r.error());
    EXPECT_FALSE(ops::flush(*user)) << "reported once";
  });
}

TEST(dynamic_embedding_column, a_resumed_run_restores_the_service_and_ends_exactly_as_one_run) {
  test::temp_dir dir{"dynamic_column_resume"};
  auto data = words(200);
  auto a = session::open({});
  ASSERT_TRUE(a);
  estimator whole{model(**a), session_config(**a)};
  ASSERT_TRUE(whole.train(column_input(data, 0), 30));

  {
    auto b = session::open({});
    ASSERT_TRUE(b);
    estimator first{model(**b), session_config(**b, dir.path())};
    ASSERT_TRUE(first.train(column_input(data, 0), 17));
  }
  auto c = session::open({}); // a fresh service: the rows come from the checkpoint
  ASSERT_TRUE(c);
  estimator second{model(**c), session_config(**c, dir.path())};
  auto r = second.train(column_input(data, 0), 30);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->resumed_from, 17u);
  for (auto* p : whole.variables().all())
    EXPECT_TRUE(p->value == second.variables().find(p->name)->value) << p->name;
  EXPECT_TRUE(rows_of(**a, {"w0", "w1", "common"}) == rows_of(**c, {"w0", "w1", "common"}));

  estimator without_service{model(**c), {.model_dir = dir.path()}};
  EXPECT_TRUE(is(without_service.train(column_input(data, 0), 40).error(), errc::invalid_config));
}

TEST(dynamic_embedding_column, an_export_holds_the_rows_and_predicts_exactly_as_the_estimator) {
  test::temp_dir dir{"dynamic_column_export"};
  auto data = words(64);
  auto s = session::open({});
  ASSERT_TRUE(s);
  // Raw words in the deep part, hashed ones in the wide part: both kinds of spec.
  auto hashed = ce::categorical_column_with_hash_bucket("words", 1000);
  ASSERT_TRUE(hashed);
  de_config wide_table = word_config();
  wide_table.name = "wide";
  wide_table.dim = 1;
  auto wide = dynamic_embedding_column(**s, *hashed, wide_table);
  auto deep = dynamic_embedding_column(**s, "words", word_config());
  ASSERT_TRUE(wide && deep);
  auto fn = dnn_linear_combined_model({.columns = {*ce::numeric_column<float>("x"), *deep},
                                       .hidden_units = {8},
                                       .linear_columns = {*wide},
                                       .head = {.kind = ce::head_kind::binary}});
  ASSERT_TRUE(fn);
  estimator e{*fn, session_config(**s)};
  ASSERT_TRUE(e.train(column_input(data, 0), 30));
  auto version = export_model(e, dir.path(), column_input(data, 1));
  ASSERT_TRUE(version) << render(version.error());
  auto ordered = [data] { return make_dataset(data, {.batch_size = 64, .shuffle = false}); };
  auto expected = e.predict(ordered);
  ASSERT_TRUE(expected);
  ASSERT_TRUE(e.train(column_input(data, 0), 60)); // the service moves on; the export does not

  auto loaded = exported_model::load(dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  std::vector<size_t> all(64);
  std::iota(all.begin(), all.end(), size_t{0});
  auto got = (*loaded)->predict(gather(*data, all));
  ASSERT_TRUE(got) << render(got.error());
  EXPECT_TRUE(*got == *expected) << "the export's rows are those of its step";
  EXPECT_TRUE(is((*loaded)->predict_labels(gather(*data, all)).error(), errc::invalid_config))
    << "a binary head predicts no labels";
}

TEST(dynamic_embedding_column, a_group_is_its_fields_side_by_side_and_exports_as_one) {
  test::temp_dir dir{"dynamic_column_group"};
  auto data = words(64);
  auto hashed = ce::categorical_column_with_hash_bucket("words", 1000);
  ASSERT_TRUE(hashed);
  auto raw = word_config();
  raw.name = "raw";
  auto wide = word_config();
  wide.name = "hashed";
  wide.dim = 1;
  std::vector<dynamic_field> fields{{"words", nullptr, raw}, {{}, *hashed, wide}};
  std::vector<size_t> all(64);
  std::iota(all.begin(), all.end(), size_t{0});
  auto b = gather(*data, all);
  // The same rows as the fields' own columns give, in a service of their own.
  auto s = session::open({});
  auto alone = session::open({});
  ASSERT_TRUE(s && alone);
  auto group = dynamic_embedding_columns(**s, fields);
  ASSERT_TRUE(group) << render(group.error());
  EXPECT_EQ((*group)->width(), 5u);
  auto first = dynamic_embedding_column(**alone, "words", raw);
  auto second = dynamic_embedding_column(**alone, *hashed, wide);
  ASSERT_TRUE(first && second);
  auto together = (*group)->forward(b.features);
  auto a = (*first)->forward(b.features);
  auto c = (*second)->forward(b.features);
  ASSERT_TRUE(together && a && c);
  EXPECT_EQ(together->leftCols(4), *a);
  EXPECT_EQ(together->rightCols(1), *c);

  auto fn = dnn_model({.columns = {*ce::numeric_column<float>("x"), *group},
                       .hidden_units = {8},
                       .head = {.kind = ce::head_kind::binary}});
  ASSERT_TRUE(fn);
  estimator e{*fn, session_config(**s)};
  ASSERT_TRUE(e.train(column_input(data, 0), 30));
  auto trained = ops::stats(**s, "hashed");
  ASSERT_TRUE(trained);
  EXPECT_GT(trained->rows, 0u) << "the second field's table trained too";
  auto version = export_model(e, dir.path(), column_input(data, 1));
  ASSERT_TRUE(version) << render(version.error());
  auto expected =
    e.predict([data] { return make_dataset(data, {.batch_size = 64, .shuffle = false}); });
  ASSERT_TRUE(expected);
  auto loaded = exported_model::load(dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  auto got = (*loaded)->predict(b);
  ASSERT_TRUE(got) << render(got.error());
  EXPECT_TRUE(*got == *expected);

  EXPECT_TRUE(is(dynamic_embedding_columns(**s, {}).error(), errc::invalid_config));
  auto twice = dynamic_embedding_columns(**s, {{"words", nullptr, raw}, {"x", nullptr, raw}});
  ASSERT_FALSE(twice);
  EXPECT_NE(render(twice.error()).find("two fields name embedding 'raw'"), std::string::npos);
}

// The look-ahead: a group's keys of a batch, strings and bucket ids, handed over before its
// step bring the rows from LevelDB into the memory tiers; the step's lookup then finds them
// there and reads what it would have read without them.
TEST(dynamic_embedding_column, prefetched_rows_of_a_batch_are_hits_at_its_lookup) {
  test::temp_dir dir{"dynamic_column_prefetch"};
  auto hashed = ce::categorical_column_with_hash_bucket("words", 1000);
  ASSERT_TRUE(hashed);
  auto raw = word_config();
  raw.name = "raw";
  raw.backend = backend_kind::leveldb;
  raw.path = dir.path() + "/raw";
  raw.cache_bytes = 1; // 16 rows a shard
  auto wide = raw;
  wide.name = "hashed";
  wide.path = dir.path() + "/hashed";
  wide.dim = 1;
  std::vector<dynamic_field> fields{{"words", nullptr, raw}, {{}, *hashed, wide}};
  auto s = session::open({});
  ASSERT_TRUE(s);
  auto group = dynamic_embedding_columns(**s, fields);
  ASSERT_TRUE(group) << render(group.error());
  // One word a row, each its own: 200 rows where the memory tiers hold 32.
  auto data = std::make_shared<example_table>();
  std::vector<std::vector<std::string>> w;
  for (size_t i = 0; i < 200; ++i)
    w.push_back({"k" + std::to_string(i)});
  data->features["x"] = ce::feature_value::numeric(std::vector<double>(200, 1.0));
  data->features["words"] = ce::feature_value::categorical(w);
  data->labels = matrix::Zero(200, 1);
  auto batch_of = [&](size_t first, size_t rows) {
    std::vector<size_t> which(rows);
    std::iota(which.begin(), which.end(), first);
    return gather(*data, which);
  };
  auto ahead = batch_of(0, 8);
  EXPECT_FALSE(prefetch_rows(*group, ahead.features)) << "tables not created yet: passed over";
  for (size_t first = 0; first < 200; first += 40) // every row made, most of them on disk
    ASSERT_TRUE((*group)->forward(batch_of(first, 40).features));
  auto read_before = (*group)->forward(ahead.features);
  ASSERT_TRUE(read_before);
  for (size_t first = 40; first < 200; first += 40) // the batch's rows leave memory again
    ASSERT_TRUE((*group)->forward(batch_of(first, 40).features));
  ASSERT_FALSE(prefetch_rows(*group, ahead.features));
  auto raw_stats = ops::stats(**s, "raw"), wide_stats = ops::stats(**s, "hashed");
  ASSERT_TRUE(raw_stats && wide_stats);
  EXPECT_GT(raw_stats->prefetched_rows, 0u);
  EXPECT_GT(wide_stats->prefetched_rows, 0u) << "bucket ids are prefetched by their keys too";
  auto misses = raw_stats->tier_misses + wide_stats->tier_misses;
  auto read = (*group)->forward(ahead.features);
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, *read_before);
  raw_stats = ops::stats(**s, "raw");
  wide_stats = ops::stats(**s, "hashed");
  ASSERT_TRUE(raw_stats && wide_stats);
  EXPECT_EQ(raw_stats->tier_misses + wide_stats->tier_misses, misses)
    << "every row of the batch was in memory";

  auto numeric = dynamic_embedding_column(**s, "x", word_config());
  ASSERT_TRUE(numeric);
  EXPECT_TRUE(is(prefetch_rows(*numeric, ahead.features), errc::invalid_argument))
    << "a numeric feature, as forward refuses it";
  auto dense = ce::numeric_column<float>("x");
  ASSERT_TRUE(dense);
  EXPECT_FALSE(prefetch_rows(*dense, ahead.features)) << "not a dynamic column: nothing to do";
}

TEST(dynamic_embedding_column, bad_configs_and_features_are_refused) {
  auto s = session::open({});
  ASSERT_TRUE(s);
  auto zero = word_config();
  zero.dim = 0;
  EXPECT_TRUE(is(dynamic_embedding_column(**s, "words", zero).error(), errc::invalid_config));
  auto column = dynamic_embedding_column(**s, "x", word_config());
  ASSERT_TRUE(column);
  auto t = words(4);
  EXPECT_TRUE(is((*column)->forward(t->features).error(), errc::invalid_argument))
    << "a numeric feature";
  auto missing = dynamic_embedding_column(**s, "nope", word_config());
  EXPECT_TRUE(is((*missing)->forward(t->features).error(), errc::invalid_argument));
}

} // namespace
} // namespace darcy::ops::estimator
