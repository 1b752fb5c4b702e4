// The fixture of the LevelDB tier's tests: a database directory per test, stores opened on
// it, the memory store each must agree with, a random workload run on both, and a forked child
// to SIGKILL.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/leveldb_store.hpp"

namespace darcy::stores::leveldb_testing {

namespace fs = std::filesystem;

/// A forked child that runs body(fd), fd being the write end of a pipe to the test, which reads
/// what the child says from reader() and then SIGKILLs it with kill().
class child_process {
public:
  template <class Body>
  explicit child_process(Body body) {
    if (::pipe(fds_) != 0)
      return;
    pid_ = ::fork();
    if (pid_ == 0) {
      body(fds_[1]);
      ::_exit(0);
    }
  }
  bool started() const { return pid_ > 0; }
  int reader() const { return fds_[0]; }
  /// SIGKILLs the child and reaps it: true when the signal ended it.
  bool kill() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(fds_[0]);
    ::close(fds_[1]);
    return WIFSIGNALED(status);
  }

private:
  int fds_[2] = {-1, -1};
  pid_t pid_ = -1;
};

class leveldb_store_test : public ::testing::Test {
protected:
  void SetUp() override {
    root = (fs::temp_directory_path() / ("darcy_leveldb_" + std::to_string(::getpid()))).string();
    fs::remove_all(root);
  }
  void TearDown() override { fs::remove_all(root); }

  de_config config(const std::string& sub, uint64_t cache_bytes = 1 << 20) {
    de_config cfg;
    cfg.name = "items";
    cfg.dim = 4;
    cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
    cfg.backend = backend_kind::leveldb;
    cfg.path = root + "/" + sub;
    cfg.cache_bytes = cache_bytes;
    return cfg;
  }

  /// `cfg`'s store, which hands every write-back to the background writer (the tests' caches
  /// are small): min_background_rows 1 unless `min_background_rows` says otherwise. Its
  /// pointer index keeps `index_tag_bits` of a hash's tag.
  std::unique_ptr<leveldb_store> open(const de_config& cfg, size_t min_background_rows = 1,
                                      int index_tag_bits = pointer_index::tag_bits) {
    auto store = leveldb_store::open(cfg, index_tag_bits);
    EXPECT_TRUE(store) << render(error_of(store));
    if (!store)
      return nullptr;
    (*store)->set_min_background_rows(min_background_rows);
    return std::move(*store);
  }

  std::vector<float> lookup(embedding_store& store, const std::vector<std::string>& keys) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> out(keys.size() * store.dim());
    EXPECT_FALSE(store.lookup(views, out));
    return out;
  }

  /// A memory store of `cfg`'s shape, which a store of `cfg` must agree with.
  std::unique_ptr<embedding_store> memory_twin(de_config cfg) {
    cfg.backend = backend_kind::memory;
    auto store = make_store(cfg);
    EXPECT_TRUE(store) << render(error_of(store));
    return store ? std::move(*store) : nullptr;
  }

  /// One step of a random workload on two stores that must agree: 8 keys below `keys` drawn
  /// (repeats dropped), their rows compared, then the same gradients applied to both.
  void twin_step(embedding_store& disk, embedding_store& mem, std::mt19937& rng, int keys, int step,
                 std::vector<std::string>& drawn) {
    std::uniform_int_distribution<int> pick{0, keys - 1};
    std::normal_distribution<float> noise{0, 0.5f};
    drawn.clear();
    for (int k = 0; k < 8; ++k)
      drawn.push_back("key" + std::to_string(pick(rng)));
    std::sort(drawn.begin(), drawn.end());
    drawn.erase(std::unique(drawn.begin(), drawn.end()), drawn.end());
    ASSERT_EQ(lookup(disk, drawn), lookup(mem, drawn)) << "step " << step;
    std::vector<std::string_view> views(drawn.begin(), drawn.end());
    std::vector<float> grads(drawn.size() * disk.dim());
    for (auto& g : grads)
      g = noise(rng);
    ASSERT_FALSE(disk.update(views, grads, step));
    ASSERT_FALSE(mem.update(views, grads, step));
  }

  /// Every row's values, optimizer slots and update count.
  using row_state = std::tuple<std::vector<float>, std::vector<float>, uint64_t>;
  std::map<std::string, row_state> state_of(embedding_store& store) {
    std::map<std::string, row_state> rows;
    EXPECT_FALSE(store.export_rows([&](const row_record& r) {
      rows[std::string{r.key}] = {
        {r.values.begin(), r.values.end()}, {r.slots.begin(), r.slots.end()}, r.updates};
    }));
    return rows;
  }

  std::string root;
};

} // namespace darcy::stores::leveldb_testing
