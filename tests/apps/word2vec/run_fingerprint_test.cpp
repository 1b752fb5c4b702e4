#include "apps/word2vec/run_fingerprint.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::word2vec {
namespace {

corpus make_corpus(const std::string& text) {
  auto c = parse_corpus(text, corpus_format::text, "test");
  EXPECT_TRUE(c);
  return std::move(*c);
}

TEST(run_fingerprint, the_same_run_resumes_at_the_stored_batch) {
  auto c = make_corpus("a b c\nd e f\n");
  train_options o;
  auto decoded = decode_position(encode_position(17, c, o), c, o);
  ASSERT_TRUE(decoded) << render(decoded.error());
  EXPECT_EQ(*decoded, 17u);
  auto more_threads = o;
  more_threads.threads = 7;
  EXPECT_TRUE(decode_position(encode_position(17, c, o), c, more_threads));
}

TEST(run_fingerprint, every_difference_is_refused_and_named) {
  auto c = make_corpus("a b c\nd e f\n");
  train_options o;
  struct change {
    const char* named;
    std::function<void(train_options&)> apply;
  };
  std::vector<change> changes{
    {"--name: checkpoint w2v, this run other", [](auto& x) { x.name = "other"; }},
    {"--batch-words: checkpoint 1000, this run 10", [](auto& x) { x.batch_words = 10; }},
    {"--in-order: checkpoint no, this run yes", [](auto& x) { x.in_order = true; }},
    {"--dim", [](auto& x) { x.dim = 8; }},
    {"--window", [](auto& x) { x.window = 2; }},
    {"--negative", [](auto& x) { x.negative = 1; }},
    {"--sample", [](auto& x) { x.sample = 0; }},
    {"--epochs", [](auto& x) { x.epochs = 1; }},
    {"--alpha", [](auto& x) { x.alpha = 0.5f; }},
    {"--seed", [](auto& x) { x.seed = 9; }},
    {"--min-count", [](auto& x) { x.min_count = 3; }},
    {"--vocab-cap", [](auto& x) { x.vocab_cap = 2; }},
  };
  auto stored = encode_position(3, c, o);
  for (auto& x : changes) {
    auto other = o;
    x.apply(other);
    auto decoded = decode_position(stored, c, other);
    ASSERT_FALSE(decoded) << x.named;
    EXPECT_TRUE(is(decoded.error(), errc::invalid_argument));
    EXPECT_NE(render(decoded.error()).find(x.named), std::string::npos) << render(decoded.error());
  }
}

TEST(run_fingerprint, another_corpus_is_refused_even_of_the_same_size) {
  auto c = make_corpus("a b c\nd e f\n");
  auto same_size = make_corpus("a b c\nd e g\n");
  auto longer = make_corpus("a b c\nd e f\ng\n");
  train_options o;
  auto stored = encode_position(3, c, o);
  auto swapped = decode_position(stored, same_size, o);
  ASSERT_FALSE(swapped);
  EXPECT_NE(render(swapped.error()).find("corpus-head-hash"), std::string::npos);
  auto grown = decode_position(stored, longer, o);
  ASSERT_FALSE(grown);
  EXPECT_NE(render(grown.error()).find("corpus-tokens: checkpoint 6, this run 7"),
            std::string::npos)
    << render(grown.error());
}

TEST(run_fingerprint, positions_that_do_not_parse_are_corrupt_and_the_old_form_still_reads) {
  auto c = make_corpus("a b\n");
  train_options o;
  for (std::string bad :
       {"", "batch=", "batch=x1", "batch=1 =3", "step=4", "batch=99999999999999999999999"}) {
    auto decoded = decode_position(bad, c, o);
    ASSERT_FALSE(decoded) << bad;
    EXPECT_TRUE(is(decoded.error(), errc::corrupt_file)) << bad;
  }
  auto old = decode_position("batch=12", c, o);
  ASSERT_TRUE(old);
  EXPECT_EQ(*old, 12u);
}

} // namespace
} // namespace darcy::word2vec
