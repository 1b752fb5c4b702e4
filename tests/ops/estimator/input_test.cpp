// The dataset pipeline: batches cover every example once per epoch, in a seeded order per
// epoch; a pipeline that seeks to another's position gives the same batches from there on.
#include "ops/estimator/input.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::ops::estimator {
namespace {

std::shared_ptr<example_table> numbered(size_t rows) {
  auto t = std::make_shared<example_table>();
  std::vector<double> ids;
  std::vector<std::vector<std::string>> names;
  for (size_t i = 0; i < rows; ++i) {
    ids.push_back(double(i));
    names.push_back({"n" + std::to_string(i)});
  }
  t->features["id"] = compute::estimator::feature_value::numeric(ids);
  t->features["name"] = compute::estimator::feature_value::categorical(names);
  t->labels = matrix(rows, 1);
  for (size_t i = 0; i < rows; ++i)
    t->labels(i, 0) = float(i);
  return t;
}

std::vector<std::vector<double>> drain(input_pipeline& p, size_t limit = 1000) {
  std::vector<std::vector<double>> out;
  while (out.size() < limit) {
    auto b = p.next();
    EXPECT_TRUE(b) << render(b.error());
    if (!b || !*b)
      break;
    out.push_back((*b)->features.at("id").numbers);
    for (size_t i = 0; i < (*b)->rows(); ++i) {
      EXPECT_EQ((*b)->labels(i, 0), float(out.back()[i]));
      EXPECT_EQ((*b)->features.at("name").strings[i][0],
                "n" + std::to_string(size_t(out.back()[i])));
    }
  }
  return out;
}

TEST(dataset, each_epoch_covers_every_example_once_in_a_seeded_order) {
  struct {
    dataset_options o;
    size_t batches;
    size_t last_size;
    size_t total;
  } cases[] = {
    {{.batch_size = 4, .epochs = 2, .shuffle = true, .seed = 3}, 6, 2, 20},
    {{.batch_size = 4, .epochs = 2, .shuffle = false}, 6, 2, 20},
    {{.batch_size = 4, .epochs = 1, .drop_remainder = true}, 2, 4, 8},
    {{.batch_size = 20, .epochs = 3}, 3, 10, 30},
  };
  for (auto& c : cases) {
    auto p = make_dataset(numbered(10), c.o);
    ASSERT_TRUE(p);
    auto batches = drain(**p);
    ASSERT_EQ(batches.size(), c.batches);
    EXPECT_EQ(batches.back().size(), c.last_size);
    std::multiset<double> seen;
    for (auto& b : batches)
      seen.insert(b.begin(), b.end());
    EXPECT_EQ(seen.size(), c.total); // with at most `epochs` of each: every one once per epoch
    for (double i = 0; i < 10; ++i)
      EXPECT_LE(seen.count(i), c.o.epochs);
  }
  auto a = make_dataset(numbered(10), {.batch_size = 10, .epochs = 2, .seed = 3});
  auto first_epochs = drain(**a);
  EXPECT_NE(first_epochs[0], first_epochs[1]) << "each epoch draws its own order";
}

TEST(dataset, a_pipeline_seeking_to_a_position_continues_with_the_same_batches) {
  dataset_options o{.batch_size = 3, .epochs = 0, .seed = 9}; // forever
  auto a = make_dataset(numbered(10), o);
  ASSERT_TRUE(a);
  drain(**a, 5); // into the second epoch
  auto position = (*a)->position();
  auto rest = drain(**a, 8);
  auto b = make_dataset(numbered(10), o);
  ASSERT_FALSE((*b)->seek(position));
  EXPECT_EQ(drain(**b, 8), rest);
  for (auto bad : {"", "1", "x:2", "0:11", "1:2:3"})
    EXPECT_TRUE(is((*b)->seek(bad), errc::invalid_argument)) << bad;
  auto past = (*b)->seek("0:11");
  EXPECT_NE(render(past).find("past this dataset's 10 rows"), std::string::npos)
    << "a checkpoint of another data set says so: " << render(past);
}

TEST(dataset, a_prefetched_pipeline_gives_the_same_batches_and_positions) {
  dataset_options o{.batch_size = 3, .epochs = 2, .seed = 4};
  for (size_t depth : {1u, 4u}) {
    auto plain = make_dataset(numbered(10), o);
    auto ahead = prefetch(std::move(*make_dataset(numbered(10), o)), depth);
    auto first = drain(*ahead, 3);
    EXPECT_EQ(first, drain(**plain, 3));
    EXPECT_EQ(ahead->position(), (*plain)->position()) << "read-ahead batches are not counted";
    EXPECT_EQ(drain(*ahead), drain(**plain));
    auto end = ahead->next();
    ASSERT_TRUE(end);
    EXPECT_FALSE(*end) << "the end stays the end";
    ASSERT_FALSE(ahead->seek("1:3"));
    ASSERT_FALSE((*plain)->seek("1:3"));
    EXPECT_EQ(drain(*ahead), drain(**plain));
  }
}

// The look-ahead's hook, with the trainer taking a batch only once the reader has filled the
// queue behind it: every batch queued behind another is shown once, in order (all but the
// first, which the trainer takes at once), and the batches handed out are unchanged. With a
// queue of one, every batch is taken at once and none is shown.
TEST(dataset, on_read_sees_each_batch_queued_behind_another_once_in_order) {
  dataset_options o{.batch_size = 3, .epochs = 2, .seed = 4}; // 8 batches
  for (size_t depth : {1u, 2u, 4u}) {
    SCOPED_TRACE(depth);
    std::mutex mutex;
    std::condition_variable shown;
    std::vector<std::vector<double>> seen;
    auto plain = make_dataset(numbered(10), o);
    auto expected = drain(**plain);
    auto ahead = prefetch(std::move(*make_dataset(numbered(10), o)), depth, [&](const batch& b) {
      std::lock_guard<std::mutex> lock{mutex};
      seen.push_back(b.features.at("id").numbers);
      shown.notify_all();
    });
    // Waits until the reader has shown the batches it can read ahead of `taken` batches.
    auto wait_for_reader = [&](size_t taken) {
      if (depth < 2)
        return;
      std::unique_lock<std::mutex> lock{mutex};
      auto due = std::min(taken + depth - 1, expected.size() - 1);
      EXPECT_TRUE(
        shown.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() >= due; }))
        << "the reader showed " << seen.size() << " of " << due;
    };
    std::vector<std::vector<double>> taken;
    while (true) {
      wait_for_reader(taken.size());
      auto b = ahead->next();
      ASSERT_TRUE(b) << render(b.error());
      if (!*b)
        break;
      taken.push_back((*b)->features.at("id").numbers);
    }
    EXPECT_EQ(taken, expected);
    ahead.reset(); // joins the reader
    std::vector<std::vector<double>> behind(taken.begin() + 1, taken.end());
    EXPECT_EQ(seen, depth < 2 ? std::vector<std::vector<double>>{} : behind);
  }
}

TEST(dataset, bad_tables_and_options_are_refused) {
  EXPECT_TRUE(is(make_dataset(numbered(4), {.batch_size = 0}).error(), errc::invalid_config));
  auto t = numbered(4);
  t->features["short"] = compute::estimator::feature_value::numeric({1, 2});
  EXPECT_TRUE(is(make_dataset(t, {}).error(), errc::invalid_config));
  auto u = numbered(4);
  u->labels = matrix(3, 1);
  EXPECT_TRUE(is(make_dataset(u, {}).error(), errc::invalid_config));
}

} // namespace
} // namespace darcy::ops::estimator
