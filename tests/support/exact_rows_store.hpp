// A memory store holding given rows exactly, for tests that check results against known rows:
// zero init, SGD at rate 1, and each row written by one gradient of -row.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::test {

/// `rows` (2 values each) in a new store of dim 2.
inline std::unique_ptr<stores::memory_store> exact_rows_store(
  const std::map<std::string, std::vector<float>>& rows) {
  stores::memory_store_options opts;
  opts.dim = 2;
  opts.init.kind = init_kind::zeros;
  opts.optimizer.kind = optimizer_kind::sgd;
  opts.optimizer.learning_rate = 1.0f;
  auto store = stores::memory_store::make(std::move(opts));
  EXPECT_TRUE(store) << render(store.error());
  for (auto& [key, row] : rows) {
    std::string_view keys[] = {key};
    std::vector<float> grads{-row[0], -row[1]};
    std::vector<float> out(2);
    EXPECT_FALSE((*store)->lookup(keys, out));
    EXPECT_FALSE((*store)->update(keys, grads, 1));
  }
  return std::move(*store);
}

} // namespace darcy::test
