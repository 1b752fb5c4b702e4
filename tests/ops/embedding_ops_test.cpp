#include "ops/embedding_ops.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "messages/embedding/embedding_interfaces.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/embedding_requests.hpp"

namespace darcy::ops {
namespace {

class embedding_ops_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s = std::move(*opened);
  }

  matrix rows_of(const std::vector<std::string>& keys, const de_config& cfg,
                 const std::string& name) {
    auto r = dynamic_embedding_lookup(*s, keys, cfg, name);
    EXPECT_TRUE(r) << render(r.error());
    return r ? r->rows : matrix{};
  }

  std::unique_ptr<session> s;
};

TEST_F(embedding_ops_test, lookup_returns_rows_in_key_order_and_backward_applies_sgd) {
  auto cfg = test::uniform_sgd_table(4);
  auto first = dynamic_embedding_lookup(*s, {"b", "a", "b"}, cfg, "emb");
  ASSERT_TRUE(first) << render(first.error());
  ASSERT_EQ(first->rows.rows(), 3);
  EXPECT_EQ(first->rows.row(0), first->rows.row(2));
  EXPECT_NE(first->rows.row(0), first->rows.row(1));
  matrix grads = matrix::Ones(3, 4);
  ASSERT_FALSE(first->handle.backward(grads));
  auto after = rows_of({"a", "b"}, cfg, "emb");
  // "a" got one gradient row, "b" two (summed), each scaled by the learning rate 0.5.
  EXPECT_TRUE(after.row(0).isApprox((first->rows.row(1).array() - 0.5f).matrix(), 1e-6f));
  EXPECT_TRUE(after.row(1).isApprox((first->rows.row(0).array() - 1.0f).matrix(), 1e-6f));
}

TEST_F(embedding_ops_test, backward_rejects_bad_gradients_and_changes_nothing) {
  auto cfg = test::uniform_sgd_table(2);
  auto r = dynamic_embedding_lookup(*s, {"k"}, cfg, "emb");
  ASSERT_TRUE(r);
  struct bad_case {
    const char* what;
    matrix grads;
    errc expected;
  };
  matrix nan_grad = matrix::Zero(1, 2);
  nan_grad(0, 1) = std::nanf("");
  std::vector<bad_case> cases{{"wrong rows", matrix::Zero(2, 2), errc::dimension_mismatch},
                              {"wrong columns", matrix::Zero(1, 3), errc::dimension_mismatch},
                              {"NaN", nan_grad, errc::non_finite}};
  for (auto& c : cases) {
    auto err = r->handle.backward(c.grads);
    EXPECT_TRUE(is(err, c.expected)) << c.what << ": " << render(err);
  }
  EXPECT_EQ(rows_of({"k"}, cfg, "emb"), r->rows);
}

TEST_F(embedding_ops_test, sampled_logits_match_brute_force_reference) {
  auto cfg = test::uniform_sgd_table(3);
  // Frequencies: key i is looked up i + 1 times here and once more for `table` below, so its
  // unigram^0.75 weight is (i + 2)^0.75.
  std::vector<std::string> vocab;
  for (int i = 0; i < 12; ++i)
    vocab.push_back("w" + std::to_string(i));
  for (int i = 0; i < 12; ++i)
    for (int n = 0; n <= i; ++n)
      ASSERT_TRUE(dynamic_embedding_lookup(*s, {vocab[static_cast<size_t>(i)]}, cfg, "out"));
  std::map<std::string, double> q;
  double total = 0;
  for (int i = 0; i < 12; ++i)
    total += std::pow(i + 2.0, 0.75);
  for (int i = 0; i < 12; ++i)
    q[vocab[static_cast<size_t>(i)]] = std::pow(i + 2.0, 0.75) / total;
  auto table = rows_of(vocab, cfg, "out");
  auto row_of = [&](const std::string& key) {
    auto at = std::find(vocab.begin(), vocab.end(), key) - vocab.begin();
    return table.row(at);
  };

  std::vector<std::vector<std::string>> positives{{"w1"}, {"w2", "w5", "w7"}};
  matrix act(2, 3);
  act << 0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f;
  const uint32_t num_sampled = 12;
  auto r = sampled_logits(*s, positives, act, num_sampled, cfg, "out", 7);
  ASSERT_TRUE(r) << render(r.error());
  ASSERT_EQ(r->sampled_keys.size(), num_sampled);
  ASSERT_EQ(r->logits.cols(), 3 + num_sampled);
  for (size_t b = 0; b < 2; ++b) {
    auto bi = static_cast<Eigen::Index>(b);
    float label_sum = 0;
    for (Eigen::Index c = 0; c < r->logits.cols(); ++c) {
      bool positive_col = c < 3;
      std::string key = positive_col ? (static_cast<size_t>(c) < positives[b].size()
                                          ? positives[b][static_cast<size_t>(c)]
                                          : std::string{})
                                     : r->sampled_keys[static_cast<size_t>(c - 3)];
      bool hit = !positive_col && std::count(positives[b].begin(), positives[b].end(), key) > 0;
      if (key.empty() || hit) {
        EXPECT_EQ(r->logits(bi, c), masked_logit) << b << "," << c;
        EXPECT_EQ(r->labels(bi, c), 0.0f);
        continue;
      }
      double expected =
        act.row(bi).cast<double>().dot(row_of(key).cast<double>()) - std::log(num_sampled * q[key]);
      EXPECT_NEAR(r->logits(bi, c), expected, 1e-4) << b << "," << c << " " << key;
      label_sum += r->labels(bi, c);
      EXPECT_EQ(r->labels(bi, c), positive_col ? 1.0f / positives[b].size() : 0.0f);
    }
    EXPECT_FLOAT_EQ(label_sum, 1.0f);
  }

  // backward: d(activations) and the rows' gradients against the dense reference.
  matrix dlogits = matrix::Constant(r->logits.rows(), r->logits.cols(), 0.1f);
  auto dact = r->backward(dlogits);
  ASSERT_TRUE(dact) << render(dact.error());
  matrix expected_dact = matrix::Zero(2, 3);
  std::map<std::string, Eigen::RowVector3f> expected_grad;
  for (size_t b = 0; b < 2; ++b)
    for (Eigen::Index c = 0; c < r->logits.cols(); ++c) {
      auto& key = r->column_keys[b][static_cast<size_t>(c)];
      if (key.empty())
        continue;
      auto bi = static_cast<Eigen::Index>(b);
      expected_dact.row(bi) += 0.1f * row_of(key);
      auto& g = expected_grad.try_emplace(key, Eigen::RowVector3f::Zero()).first->second;
      g += 0.1f * act.row(bi);
    }
  EXPECT_TRUE(dact->isApprox(expected_dact, 1e-5f));
  auto after = rows_of(vocab, cfg, "out");
  for (size_t i = 0; i < vocab.size(); ++i) {
    Eigen::RowVector3f g =
      expected_grad.count(vocab[i]) ? expected_grad[vocab[i]] : Eigen::RowVector3f::Zero();
    auto i_row = static_cast<Eigen::Index>(i);
    EXPECT_TRUE((after.row(i_row) - (table.row(i_row) - 0.5f * g)).norm() < 1e-5f) << vocab[i];
  }
}

TEST_F(embedding_ops_test,
       sampled_logits_of_a_table_that_holds_only_the_positives_have_no_negatives) {
  auto cfg = test::uniform_sgd_table(3);
  matrix act = matrix::Ones(2, 3);
  auto first = sampled_logits(*s, {{"a"}, {"b"}}, act, 4, cfg, "fresh", 1);
  ASSERT_TRUE(first) << render(first.error());
  EXPECT_TRUE(first->sampled_keys.empty());
  EXPECT_EQ(first->logits.cols(), 1);
  EXPECT_EQ(first->labels, matrix::Ones(2, 1));
  // Once the table holds other rows, they are the negatives, drawn with replacement, as many
  // as the table has rows.
  auto second = sampled_logits(*s, {{"a"}}, matrix::Ones(1, 3), 2, cfg, "fresh", 2);
  ASSERT_TRUE(second) << render(second.error());
  EXPECT_EQ(second->sampled_keys, (std::vector<std::string>(2, "b")));
  auto above = sampled_logits(*s, {{"a"}}, matrix::Ones(1, 3), 3, cfg, "fresh", 2);
  ASSERT_FALSE(above);
  EXPECT_TRUE(is(above.error(), errc::invalid_argument));
  EXPECT_NE(render(above.error()).find("num_sampled 3 is above the 2 rows of 'fresh'"),
            std::string::npos)
    << render(above.error());
}

// A positive counts in its row's frequency once per example that holds it; the negatives drawn
// are read, never counted, so the sampler's draws do not raise what it draws by.
TEST_F(embedding_ops_test, sampled_logits_count_each_positive_occurrence_and_no_negative) {
  auto cfg = test::uniform_sgd_table(3);
  std::vector<std::string> vocab{"a", "b", "c", "d", "e", "f", "g", "h"};
  ASSERT_TRUE(dynamic_embedding_lookup(*s, vocab, cfg, "labels"));
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto r = sampled_logits(*s, {{"a"}, {"a"}, {"b"}}, matrix::Ones(3, 3), 5, cfg, "labels", seed);
    ASSERT_TRUE(r) << render(r.error());
    EXPECT_EQ(r->sampled_keys.size(), 5u);
  }
  auto sampler = s->sampler();
  ASSERT_TRUE(sampler);
  auto drawn = runtime::ask<sample_result>(
    s->system(), *sampler, s->timeout(), sample_atom::value, std::string{"labels"},
    std::vector<std::string>{"a", "b", "c"}, uint32_t{1}, uint64_t{1});
  ASSERT_TRUE(drawn) << render(drawn.error());
  // Frequencies: a 1 + 3 * 2, b 1 + 3, the other six 1.
  auto total = std::pow(7.0, 0.75) + std::pow(4.0, 0.75) + 6.0;
  EXPECT_NEAR(drawn->probs[0], std::pow(7.0, 0.75) / total, 1e-12);
  EXPECT_NEAR(drawn->probs[1], std::pow(4.0, 0.75) / total, 1e-12);
  EXPECT_NEAR(drawn->probs[2], 1.0 / total, 1e-12);
}

TEST_F(embedding_ops_test, sampled_logits_reject_bad_input) {
  auto cfg = test::uniform_sgd_table(2);
  ASSERT_TRUE(dynamic_embedding_lookup(*s, {"x", "y"}, cfg, "out"));
  matrix act = matrix::Zero(1, 2);
  EXPECT_TRUE(is(sampled_logits(*s, {}, matrix{}, 2, cfg, "out").error(), errc::empty_batch));
  EXPECT_TRUE(is(sampled_logits(*s, {{}}, act, 2, cfg, "out").error(), errc::invalid_argument));
  EXPECT_TRUE(is(sampled_logits(*s, {{"x"}}, matrix::Zero(1, 3), 2, cfg, "out").error(),
                 errc::dimension_mismatch));
  EXPECT_TRUE(is(sampled_logits(*s, {{"x"}}, act, 0, cfg, "out").error(), errc::invalid_argument));
}

TEST_F(embedding_ops_test, top_k_matches_brute_force_reference) {
  auto cfg = test::uniform_sgd_table(5);
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i)
    keys.push_back("item-" + std::to_string(i));
  auto table = rows_of(keys, cfg, "items");
  matrix queries = table.topRows(3) * 0.7f;
  queries(2, 4) += 3.0f;
  auto r = top_k(*s, queries, 10, cfg, "items");
  ASSERT_TRUE(r) << render(r.error());
  ASSERT_EQ(r->offsets.size(), 4u);
  for (Eigen::Index q = 0; q < 3; ++q) {
    std::vector<std::pair<float, std::string>> all;
    for (size_t i = 0; i < keys.size(); ++i)
      all.emplace_back(queries.row(q).dot(table.row(static_cast<Eigen::Index>(i))), keys[i]);
    std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first > b.first; });
    auto begin = r->offsets[static_cast<size_t>(q)];
    ASSERT_EQ(r->offsets[static_cast<size_t>(q) + 1] - begin, 10u);
    for (size_t j = 0; j < 10; ++j) {
      EXPECT_EQ(r->keys[begin + j], all[j].second) << "query " << q << " rank " << j;
      EXPECT_NEAR(r->scores[begin + j], all[j].first, 1e-5);
    }
  }
}

TEST_F(embedding_ops_test, approximate_top_k_reading_every_list_equals_the_exact_top_k) {
  auto cfg = test::uniform_sgd_table(6);
  cfg.ann = {.enabled = true, .probes = 4, .rerank = 50};
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i)
    keys.push_back("item-" + std::to_string(i));
  auto table = rows_of(keys, cfg, "ann_items");
  matrix queries = table.topRows(4) * 1.5f;
  auto exact = top_k(*s, queries, 10, cfg, "ann_items");
  ASSERT_TRUE(exact) << render(exact.error());
  // Every change indexed first, every list read, every candidate re-scored: the exact answer.
  auto whole = approximate_top_k(*s, queries, 10, cfg, "ann_items", top_k_score::inner_product,
                                 {.probes = 100000, .rerank = 100000, .max_staleness_ms = 0});
  ASSERT_TRUE(whole) << render(whole.error());
  EXPECT_EQ(whole->keys, exact->keys);
  EXPECT_EQ(whole->offsets, exact->offsets);
  EXPECT_EQ(whole->staleness_s, 0.0);
  // The table's own settings: most of the exact answer.
  auto approx = approximate_top_k(*s, queries, 10, cfg, "ann_items");
  ASSERT_TRUE(approx) << render(approx.error());
  ASSERT_EQ(approx->offsets, exact->offsets);
  size_t same = 0;
  for (Eigen::Index q = 0; q < queries.rows(); ++q) {
    auto at = exact->offsets[static_cast<size_t>(q)];
    std::set<std::string> want(exact->keys.begin() + at, exact->keys.begin() + at + 10);
    for (auto i = at; i < at + 10; ++i)
      same += want.count(approx->keys[i]);
  }
  EXPECT_GE(same, 36u) << "recall@10 below 0.9";
  auto stats = ops::stats(*s, "ann_items");
  ASSERT_TRUE(stats) << render(stats.error());
  EXPECT_EQ(stats->ann_rows, 3000u);
  EXPECT_EQ(stats->ann_backlog, 0u);
}

TEST_F(embedding_ops_test, approximate_top_k_refuses_bad_requests_and_tables_without_an_index) {
  auto plain = test::uniform_sgd_table(4);
  auto indexed = plain;
  indexed.ann.enabled = true;
  ASSERT_EQ(rows_of({"a", "b", "c"}, plain, "plain").rows(), 3);
  ASSERT_EQ(rows_of({"a", "b", "c"}, indexed, "indexed").rows(), 3);
  struct bad_case {
    const char* what;
    const de_config& cfg;
    const char* table;
    matrix queries;
    uint32_t k;
    errc want;
  };
  std::vector<bad_case> cases{
    {"no index", plain, "plain", matrix::Ones(1, 4), 3, errc::invalid_config},
    {"k of 0", indexed, "indexed", matrix::Ones(1, 4), 0, errc::invalid_argument},
    {"queries of another dim", indexed, "indexed", matrix::Ones(1, 3), 3, errc::dimension_mismatch},
  };
  for (auto& c : cases) {
    auto r = approximate_top_k(*s, c.queries, c.k, c.cfg, c.table);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.want)) << c.what << ": " << render(r.error());
  }
  auto stats = ops::stats(*s, "indexed");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->rows, 3u);
}

TEST_F(embedding_ops_test, save_and_restore_round_trip_rows_and_training_state) {
  auto dir = std::filesystem::temp_directory_path() / "darcy-ops-save-test";
  std::filesystem::remove_all(dir);
  auto cfg = test::uniform_sgd_table(3);
  std::vector<std::string> keys{"p", "q", "r"};
  auto before = rows_of(keys, cfg, "emb");
  training_state state{42, "epoch=1 batch=7", {1.5f, -2.0f}};
  ASSERT_FALSE(save(*s, dir.string(), state));

  auto other = session::open({});
  ASSERT_TRUE(other);
  auto restored = restore(**other, dir.string());
  ASSERT_TRUE(restored) << render(restored.error());
  EXPECT_EQ(restored->state, state);
  ASSERT_EQ(restored->embeddings.size(), 1u);
  EXPECT_EQ(restored->embeddings[0].dim, 3u);
  auto again = dynamic_embedding_lookup(**other, keys, cfg, "emb");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->rows, before);
  EXPECT_TRUE(is(restore(**other, (dir / "missing").string()).error(), errc::not_found) ||
              is(restore(**other, (dir / "missing").string()).error(), errc::io_error));
  std::filesystem::remove_all(dir);
}

// A restore replaces the service's embeddings: one created after the checkpoint is gone, and
// the next lookup creates it again instead of failing with errc::unknown_embedding.
TEST_F(embedding_ops_test,
       an_embedding_created_after_a_checkpoint_is_created_again_after_its_restore) {
  auto dir = std::filesystem::temp_directory_path() / "darcy-ops-restore-later-table";
  std::filesystem::remove_all(dir);
  auto cfg = test::uniform_sgd_table(2);
  auto first = dynamic_embedding_lookup(*s, {"a"}, cfg, "kept");
  ASSERT_TRUE(first) << render(first.error());
  ASSERT_FALSE(save(*s, dir.string(), {1, "", {}}));
  auto later = dynamic_embedding_lookup(*s, {"a"}, cfg, "later");
  ASSERT_TRUE(later) << render(later.error());
  auto restored = restore(*s, dir.string());
  ASSERT_TRUE(restored) << render(restored.error());
  ASSERT_EQ(restored->embeddings.size(), 1u);
  for (const auto* name : {"kept", "later"}) {
    auto again = dynamic_embedding_lookup(*s, {"a"}, cfg, name);
    ASSERT_TRUE(again) << name << ": " << render(again.error());
    EXPECT_EQ(again->rows, first->rows) << name;
  }
  std::filesystem::remove_all(dir);
}

// The in-process session takes the direct path; its backward, like the master's, applies once.
TEST_F(embedding_ops_test, a_handle_applies_once_and_a_read_handle_never) {
  auto cfg = test::uniform_sgd_table(2);
  auto looked_up = dynamic_embedding_lookup(*s, {"a", "b"}, cfg, "emb");
  ASSERT_TRUE(looked_up) << render(looked_up.error());
  matrix grads = matrix::Ones(2, 2);
  ASSERT_FALSE(looked_up->handle.backward(grads));
  EXPECT_TRUE(is(looked_up->handle.backward(grads), errc::not_found));
  auto read = dynamic_embedding_lookup(*s, {"a"}, cfg, "emb", false);
  ASSERT_TRUE(read);
  EXPECT_TRUE(is(read->handle.backward(matrix::Ones(1, 2)), errc::invalid_argument));
  auto after = rows_of({"a", "b"}, cfg, "emb");
  EXPECT_TRUE(after.isApprox((looked_up->rows.array() - 0.5f).matrix(), 1e-6f));
}

// Every step adds 1 to all rows, spread over the shards; a checkpoint taken while steps run
// must hold whole steps only, so all its rows are equal.
TEST_F(embedding_ops_test, saves_taken_while_another_thread_trains_hold_whole_steps) {
  de_config cfg;
  cfg.dim = 1;
  cfg.init.kind = init_kind::zeros;
  cfg.optimizer = {optimizer_kind::sgd, 1.0f};
  std::vector<std::string> keys;
  for (int k = 0; k < 32; ++k)
    keys.push_back("key-" + std::to_string(k));
  ASSERT_FALSE(s->ensure_embedding([&] {
    auto c = cfg;
    c.name = "counts";
    return c;
  }()));
  std::atomic<bool> failed{false}, saved{false};
  std::thread trainer{[&] {
    // Steps run until the saves are done (at least 50, so that some overlap them).
    for (int step = 0; (step < 50 || !saved) && !failed; ++step) {
      auto r = dynamic_embedding_lookup(*s, keys, cfg, "counts");
      if (!r || r->handle.backward(matrix::Constant(32, 1, -1.0f), step))
        failed = true;
    }
  }};
  auto base = std::filesystem::temp_directory_path() / "darcy-ops-concurrent-save";
  std::filesystem::remove_all(base);
  std::vector<std::string> dirs;
  for (int i = 0; i < 6; ++i) {
    dirs.push_back((base / std::to_string(i)).string());
    EXPECT_FALSE(save(*s, dirs.back(), {i, "", {}}));
  }
  saved = true;
  trainer.join();
  ASSERT_FALSE(failed);
  for (auto& dir : dirs) {
    auto other = session::open({});
    ASSERT_TRUE(other);
    ASSERT_TRUE(restore(**other, dir)) << dir;
    auto rows = dynamic_embedding_lookup(**other, keys, cfg, "counts", false);
    ASSERT_TRUE(rows) << render(rows.error());
    EXPECT_EQ(rows->rows.minCoeff(), rows->rows.maxCoeff()) << dir;
  }
  std::filesystem::remove_all(base);
}

} // namespace
} // namespace darcy::ops
