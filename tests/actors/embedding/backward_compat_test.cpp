// Backward compatibility, the seed's Section 4.1 made exact: the dictionary-free service (a
// master and 4 shards, raw string keys) against a dense dictionary-based reference (an Eigen
// matrix indexed by vocabulary id, TensorFlow's sparse update rules written independently
// here), fed the same keys, initial values and gradients for 1000 steps.
#include <random>

#include <Eigen/Dense>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int vocab = 200;
constexpr int dim = 8;
constexpr int steps = 1000;
constexpr int batch = 24;

// Correctly rounded square roots: Eigen's vectorized float sqrt() under EIGEN_FAST_MATH (its
// default) is an rsqrt approximation refined once, which differs in the last bits.
Eigen::ArrayXf exact_sqrt(const Eigen::ArrayXf& x) {
  return x.unaryExpr([](float v) { return std::sqrt(v); });
}

// The dense reference: rows by vocabulary id, one slot matrix per optimizer state.
struct dense_model {
  optimizer_config cfg;
  matrix w, s1, s2;
  Eigen::VectorXd row_step;

  dense_model(const optimizer_config& c, const initializer_config& init) : cfg(c) {
    w.resize(vocab, dim);
    for (int id = 0; id < vocab; ++id) {
      std::vector<float> row(dim);
      compute::initialize_row(init, compute::hash_key("w" + std::to_string(id)), row);
      w.row(id) = Eigen::Map<Eigen::RowVectorXf>(row.data(), dim);
    }
    float acc0 = c.kind == optimizer_kind::adagrad ? c.initial_accumulator : 0.0f;
    s1 = matrix::Constant(vocab, dim, acc0);
    s2 = matrix::Zero(vocab, dim);
    row_step = Eigen::VectorXd::Zero(vocab);
  }

  // Sums duplicate ids in input order (TensorFlow's _apply_sparse_duplicate_indices), then
  // applies the sparse rule to each touched row.
  void apply(const std::vector<int>& ids, const matrix& grads) {
    std::vector<int> unique;
    matrix summed = matrix::Zero(vocab, dim);
    std::vector<bool> touched(vocab, false);
    for (size_t k = 0; k < ids.size(); ++k) {
      summed.row(ids[k]) += grads.row(static_cast<Eigen::Index>(k));
      if (!touched[ids[k]]) {
        touched[ids[k]] = true;
        unique.push_back(ids[k]);
      }
    }
    for (int id : unique) {
      Eigen::ArrayXf g = summed.row(id).transpose().array();
      Eigen::ArrayXf wr = w.row(id).transpose().array();
      Eigen::ArrayXf a = s1.row(id).transpose().array();
      Eigen::ArrayXf b = s2.row(id).transpose().array();
      float lr = cfg.learning_rate;
      switch (cfg.kind) {
        case optimizer_kind::sgd: // SparseApplyGradientDescent
          wr -= lr * g;
          break;
        case optimizer_kind::adagrad: // SparseApplyAdagrad
          a += g.square();
          wr -= lr * g / exact_sqrt(a);
          break;
        case optimizer_kind::momentum: // SparseApplyMomentum
          a = cfg.momentum * a + g;
          wr -= cfg.nesterov ? (lr * (g + cfg.momentum * a)).eval() : (lr * a).eval();
          break;
        case optimizer_kind::adam: { // lazy Adam with a per-row step
          double t = ++row_step(id);
          auto lr_t = static_cast<float>(lr * std::sqrt(1 - std::pow(cfg.beta2, t)) /
                                         (1 - std::pow(cfg.beta1, t)));
          a = cfg.beta1 * a + (1 - cfg.beta1) * g;
          b = cfg.beta2 * b + (1 - cfg.beta2) * g.square();
          wr -= lr_t * a / (exact_sqrt(b) + cfg.epsilon);
          break;
        }
        case optimizer_kind::ftrl:
          break;
      }
      w.row(id) = wr.transpose();
      s1.row(id) = a.transpose();
      s2.row(id) = b.transpose();
    }
  }
};

struct compat_case {
  const char* name;
  optimizer_config optimizer;
};

class backward_compat : public test::system_fixture,
                        public ::testing::WithParamInterface<compat_case> {};

TEST_P(backward_compat, ServiceMatchesTheDenseDictionaryReferenceFor1000Steps) {
  de_config cfg;
  cfg.name = "words";
  cfg.dim = dim;
  cfg.optimizer = GetParam().optimizer;
  cfg.init = {init_kind::uniform, -0.5f, 0.5f, 0, 0, 17};
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 4);
  auto master = sys.spawn(embedding_master, opts);
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
  dense_model dense{cfg.optimizer, cfg.init};

  std::mt19937 rng{2024};
  std::uniform_int_distribution<int> zipfish{0, vocab - 1};
  std::normal_distribution<float> noise{0, 0.1f};
  for (int step = 0; step < steps; ++step) {
    std::vector<int> ids(batch);
    std::vector<std::string> keys(batch);
    for (int k = 0; k < batch; ++k) {
      // Skewed towards low ids, so that rows see many updates and duplicates are common.
      ids[k] = std::min(zipfish(rng), zipfish(rng));
      keys[k] = "w" + std::to_string(ids[k]);
    }
    matrix grads(batch, dim);
    for (Eigen::Index i = 0; i < grads.size(); ++i)
      grads.data()[i] = noise(rng);
    std::vector<float> flat(grads.data(), grads.data() + grads.size());
    auto ok = ask<ok_atom>(sys, master, test::patience, update_atom::value, cfg.name, keys, flat,
                           int64_t{step});
    ASSERT_TRUE(ok) << render(error_of(ok));
    dense.apply(ids, grads);
  }
  std::vector<std::string> all;
  for (int id = 0; id < vocab; ++id)
    all.push_back("w" + std::to_string(id));
  auto rows =
    ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value, cfg.name, all);
  ASSERT_TRUE(rows);
  double worst = 0;
  for (int id = 0; id < vocab; ++id)
    for (int d = 0; d < dim; ++d) {
      double service = (*rows)[static_cast<size_t>(id * dim + d)];
      double reference = dense.w(id, d);
      worst = std::max(worst, std::abs(service - reference) / std::max(1e-3, std::abs(reference)));
    }
  // Float rounding drifts over 1000 steps: with -march=native, the service's fused
  // multiply-adds round once where the reference, compiled at the tests' -O0, rounds twice
  // (momentum drifts furthest: 1.1e-4), so the bound is 2e-4 rather than single-step precision.
  EXPECT_LE(worst, 2e-4) << GetParam().name << ": worst relative difference " << worst;
}

optimizer_config make(optimizer_kind kind, float lr, bool nesterov = false) {
  optimizer_config c;
  c.kind = kind;
  c.learning_rate = lr;
  c.nesterov = nesterov;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
  optimizers, backward_compat,
  ::testing::Values(compat_case{"sgd", make(optimizer_kind::sgd, 0.1f)},
                    compat_case{"adagrad", make(optimizer_kind::adagrad, 0.1f)},
                    compat_case{"momentum", make(optimizer_kind::momentum, 0.05f)},
                    compat_case{"nesterov", make(optimizer_kind::momentum, 0.05f, true)},
                    compat_case{"adam", make(optimizer_kind::adam, 0.01f)}),
  [](const auto& info) { return std::string{info.param.name}; });

} // namespace
} // namespace darcy::actors
