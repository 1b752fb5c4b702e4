// ops/torch/torch_inputs: a request's instances are read against a PyTorch export's spec or
// refused naming the instance and field, and each slot's rows are the pooled rows of the
// tables, summed or averaged, an empty bag zeros.
#include "ops/torch/torch_inputs.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"

namespace darcy::ops {
namespace {

torch_spec spec_of_two_pools() {
  auto spec = parse_torch_spec(R"({"format": "darcy.torch_export", "version": 1,
    "dense": [{"name": "x", "shape": [2]}],
    "slots": [{"module": "ebc", "pools": [
       {"feature": "user", "table": "users", "dim": 3, "pooling": "sum"},
       {"feature": "ad", "table": "users", "dim": 3, "pooling": "mean"}]}],
    "output": []})");
  EXPECT_TRUE(spec) << render(spec.error());
  return *spec;
}

TEST(torch_inputs, instances_give_dense_values_and_keys_in_order) {
  auto b = read_torch_instances(spec_of_two_pools(), nlohmann::json::parse(R"([
    {"x": [1, 2], "user": 7, "ad": ["a", 9]},
    {"x": [3, 4.5], "user": [], "ad": [-2]}])"));
  ASSERT_TRUE(b) << render(b.error());
  EXPECT_EQ(b->instances, 2u);
  EXPECT_EQ(b->dense[0], (std::vector<float>{1, 2, 3, 4.5f}));
  using keys = std::vector<std::string>;
  EXPECT_EQ(b->keys[0][0], keys{"7"});
  EXPECT_TRUE(b->keys[0][1].empty());
  EXPECT_EQ(b->keys[1][0], (keys{"a", "9"}));
  EXPECT_EQ(b->keys[1][1], keys{"-2"});
}

TEST(torch_inputs, bad_instances_are_refused_naming_instance_and_field) {
  struct {
    const char* what;
    const char* second;
    const char* says;
  } cases[] = {
    {"a dense input missing", R"({"user": 1, "ad": 2})", "instance 1, 'x': missing"},
    {"a feature missing", R"({"x": [1, 2], "ad": 2})", "instance 1, 'user': missing"},
    {"an unknown field", R"({"x": [1, 2], "user": 1, "ad": 2, "age": 3})", "'age': not an input"},
    {"too few values", R"({"x": [1], "user": 1, "ad": 2})", "1 values, not 2"},
    {"a string value", R"({"x": [1, "a"], "user": 1, "ad": 2})", "not a finite number"},
    {"a float id", R"({"x": [1, 2], "user": 1.5, "ad": 2})", "an integer or a string"},
    {"an object id", R"({"x": [1, 2], "user": [{}], "ad": 2})", "an integer or a string"},
    {"not an object", R"([1])", "instance 1 is not an object"},
  };
  for (auto& c : cases) {
    auto instances = nlohmann::json::array();
    instances.push_back(nlohmann::json::parse(R"({"x": [0, 0], "user": 1, "ad": 2})"));
    instances.push_back(nlohmann::json::parse(c.second));
    auto b = read_torch_instances(spec_of_two_pools(), instances);
    ASSERT_FALSE(b) << c.what;
    EXPECT_TRUE(is(b.error(), errc::invalid_argument)) << c.what;
    EXPECT_NE(render(b.error()).find(c.says), std::string::npos)
      << c.what << ": " << render(b.error());
  }
  auto none = read_torch_instances(spec_of_two_pools(), nlohmann::json::array());
  ASSERT_FALSE(none);
  EXPECT_TRUE(is(none.error(), errc::empty_batch));
}

TEST(torch_inputs, slots_pool_the_tables_rows_and_batches_append) {
  auto s = session::open({});
  ASSERT_TRUE(s);
  de_config cfg;
  cfg.name = "users";
  cfg.dim = 3;
  auto rows = dynamic_embedding_lookup(**s, {"7", "a", "9"}, cfg, "users", false);
  ASSERT_TRUE(rows) << render(rows.error());
  auto row = [&](int r, int c) { return rows->rows(r, c); };
  auto spec = spec_of_two_pools();
  auto b = read_torch_instances(spec, nlohmann::json::parse(R"([
    {"x": [1, 2], "user": 7, "ad": ["a", 9]}])"));
  auto more = read_torch_instances(spec, nlohmann::json::parse(R"([
    {"x": [3, 4], "user": [7, 7], "ad": []}])"));
  ASSERT_TRUE(b && more);
  append_instances(*b, std::move(*more));
  ASSERT_EQ(b->instances, 2u);
  auto slots = pool_slots(**s, spec, {cfg}, *b);
  ASSERT_TRUE(slots) << render(slots.error());
  ASSERT_EQ(slots->size(), 1u);
  auto& v = (*slots)[0];
  ASSERT_EQ(v.size(), 12u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(v[c], row(0, c));                       // user 7
    EXPECT_FLOAT_EQ(v[3 + c], (row(1, c) + row(2, c)) / 2); // mean of a and 9
    EXPECT_FLOAT_EQ(v[6 + c], 2 * row(0, c));               // 7 twice, summed
    EXPECT_FLOAT_EQ(v[9 + c], 0.0f);                        // an empty bag
  }
  de_config other = cfg;
  other.name = "ads";
  auto unknown = pool_slots(**s, spec, {other}, *b);
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(is(unknown.error(), errc::unknown_embedding));
}

} // namespace
} // namespace darcy::ops
