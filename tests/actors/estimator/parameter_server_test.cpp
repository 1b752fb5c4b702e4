// A parameter server applies each gradient push with the same Adam as a local optimizer, bit
// for bit; it refuses calls before its load, tensors of the wrong shape or name, and
// non-finite gradients, each with its error and without changing its state; a numbered push
// that arrives twice is applied once.
#include "actors/estimator/parameter_server.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "actors/estimator/tensor_codec.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using compute::nn::matrix;
using compute::nn::parameter;

constexpr double learning_rate = 0.05;
/// Pushes of client 0 are applied however they are numbered.
constexpr uint64_t no_client = 0;

class parameter_server_test : public test::system_fixture {
protected:
  parameter_server_test()
    : server(sys.spawn(parameter_server, ps_config{0, compute::adam_optimizer(learning_rate)})),
      guard(sys, caf::actor_cast<caf::actor>(server)) {
    a = parameter{"a", test::gaussian_matrix(3, 2, 1)};
    b = parameter{"b", test::gaussian_matrix(1, 4, 2)};
  }

  compute::nn::parameter_list<float> list() { return {&a, &b}; }

  /// The state of fresh variables a and b at global step 7.
  ps_state fresh() {
    ps_state s;
    s.values = encode(list());
    s.slots.resize(2);
    for (auto* p : list())
      for (auto& slot : s.slots)
        append(slot, p->name, matrix::Zero(p->value.rows(), p->value.cols()));
    s.global_step = 7;
    return s;
  }

  /// The error of a call whose reply has types Rs (none when it succeeded).
  template <class... Rs, class... Ts>
  caf::error call(Ts&&... xs) {
    caf::error result;
    self->request(server, test::patience, std::forward<Ts>(xs)...)
      .receive([](Rs&...) {}, [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  /// The error of a push of client 0 (none when it was applied).
  caf::error push_error(const named_tensors& grads) {
    return call<uint64_t>(backward_atom::value, no_client, uint64_t{0}, grads, no_loss);
  }

  /// The global step a push answers; 0 after a failure.
  uint64_t push(uint64_t client, uint64_t seq, const named_tensors& grads, double loss = no_loss) {
    uint64_t step = 0;
    self->request(server, test::patience, backward_atom::value, client, seq, grads, loss)
      .receive([&](uint64_t x) { step = x; },
               [](caf::error& err) { ADD_FAILURE() << render(err); });
    return step;
  }

  /// Seeded gradients of both variables, encoded for a push.
  named_tensors seeded_grads(uint64_t seed) {
    a.grad = test::gaussian_matrix(3, 2, seed);
    b.grad = test::gaussian_matrix(1, 4, seed + 1);
    return encode(list(), true);
  }

  /// The server's loss sum and count.
  std::pair<double, uint64_t> stats() {
    std::pair<double, uint64_t> out{-1, 0};
    self->request(server, test::patience, stats_atom::value)
      .receive(
        [&](double sum, uint64_t count) {
          out = {sum, count};
        },
        [](caf::error& err) { ADD_FAILURE() << render(err); });
    return out;
  }

  static constexpr double no_loss = std::numeric_limits<double>::quiet_NaN();

  std::pair<named_tensors, uint64_t> fetch() {
    std::pair<named_tensors, uint64_t> out;
    self->request(server, test::patience, fetch_atom::value)
      .receive(
        [&](named_tensors& t, uint64_t step) {
          out = {std::move(t), step};
        },
        [](caf::error& err) { ADD_FAILURE() << render(err); });
    return out;
  }

  parameter_server_actor server;
  test::stop_on_exit guard;
  parameter<float> a, b;
  uint64_t seq_ = 0;
};

TEST_F(parameter_server_test, pushed_gradients_step_adam_exactly_as_a_local_optimizer) {
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  compute::nn::optimizer local{compute::adam_optimizer(learning_rate)};
  for (uint64_t step = 0; step < 3; ++step) {
    a.grad = test::gaussian_matrix(3, 2, 10 + step);
    b.grad = test::gaussian_matrix(1, 4, 20 + step);
    auto grads = encode(list(), true);
    local.step(list());
    EXPECT_EQ(push(no_client, 0, grads), 8 + step);
  }
  auto [values, step] = fetch();
  EXPECT_EQ(step, 10u);
  ASSERT_FALSE(check_matches(values, list()));
  EXPECT_TRUE(view(values, 0) == a.value);
  EXPECT_TRUE(view(values, 1) == b.value);
  // An empty push (a worker whose variables all live elsewhere) only counts the step.
  ASSERT_FALSE(push_error(named_tensors{}));
  EXPECT_EQ(fetch().second, 11u);
}

TEST_F(parameter_server_test, pushes_step_at_the_scheduled_rate_of_the_global_step) {
  // SGD at 0.1 warming up over 10 steps: the push at global step 7 steps at 0.08.
  optimizer_config sgd{.kind = optimizer_kind::sgd, .learning_rate = 0.1f};
  server = sys.spawn(parameter_server, ps_config{0, sgd, {.warmup_steps = 10}});
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(server)};
  auto state = fresh();
  state.slots.clear();
  ASSERT_FALSE(call<ok_atom>(load_atom::value, state));
  // The rate of the step from global step 7, as the schedule gives it.
  auto rate = compute::scheduled_rate(0.1f, {.warmup_steps = 10}, 7);
  EXPECT_NEAR(rate, 0.08f, 1e-7);
  compute::nn::optimizer local{{.kind = optimizer_kind::sgd, .learning_rate = rate}};
  auto grads = seeded_grads(5);
  local.step(list());
  EXPECT_EQ(push(no_client, 0, grads), 8u);
  auto [values, step] = fetch();
  EXPECT_TRUE(view(values, 0) == a.value);
  EXPECT_TRUE(view(values, 1) == b.value);
}

TEST_F(parameter_server_test, step_answers_the_global_step_alone_and_only_once_loaded) {
  auto before = call<uint64_t>(step_atom::value);
  EXPECT_TRUE(is(before, errc::unavailable)) << render(before);
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  auto step_of = [&] {
    uint64_t out = 0;
    self->request(server, test::patience, step_atom::value)
      .receive([&](uint64_t x) { out = x; }, [](caf::error& err) { ADD_FAILURE() << render(err); });
    return out;
  };
  EXPECT_EQ(step_of(), 7u);
  push(no_client, 0, seeded_grads(40));
  EXPECT_EQ(step_of(), 8u);
  EXPECT_EQ(step_of(), fetch().second);
}

TEST_F(parameter_server_test, a_push_sent_again_or_arriving_late_is_applied_once) {
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  auto grads = seeded_grads(30);
  struct {
    const char* what;
    uint64_t client, seq;
    uint64_t answer;
    bool applied;
  } cases[] = {
    {"a client's first push", 5, 1, 8, true},
    {"the same push again (a retry)", 5, 1, 8, false},
    {"another client's first push", 9, 1, 9, true},
    {"the first client's next push", 5, 2, 10, true},
    {"its first push, arriving late", 5, 1, 10, false},
    {"a push of client 0", no_client, 0, 11, true},
    {"client 0 again: never deduplicated", no_client, 0, 12, true},
  };
  for (auto& c : cases) {
    auto [before, step_before] = fetch();
    EXPECT_EQ(push(c.client, c.seq, grads), c.answer) << c.what;
    auto [after, step_after] = fetch();
    EXPECT_EQ(step_after, step_before + (c.applied ? 1 : 0)) << c.what;
    EXPECT_EQ(!(view(after, 0) == view(before, 0)), c.applied) << c.what;
  }
}

TEST_F(parameter_server_test, stats_sum_the_losses_of_the_steps_applied_since_the_last_load) {
  EXPECT_TRUE(is(call<double, uint64_t>(stats_atom::value), errc::unavailable))
    << "nothing loaded yet";
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  EXPECT_EQ(stats(), (std::pair<double, uint64_t>{0, 0}));
  auto grads = seeded_grads(50);
  struct {
    const char* what;
    uint64_t client, seq;
    double loss;
    double sum;
    uint64_t count;
  } cases[] = {
    {"a client's push", 5, 1, 2.0, 2.0, 1},
    {"the same push again (a retry)", 5, 1, 2.0, 2.0, 1},
    {"its next push", 5, 2, 1.0, 3.0, 2},
    {"a step without a loss", 5, 3, no_loss, 3.0, 2},
    {"an infinite loss", 5, 4, std::numeric_limits<double>::infinity(), 3.0, 2},
    {"a push of client 0", no_client, 0, 0.5, 3.5, 3},
  };
  for (auto& c : cases) {
    push(c.client, c.seq, grads, c.loss);
    EXPECT_EQ(stats(), (std::pair<double, uint64_t>{c.sum, c.count})) << c.what;
  }
  ASSERT_FALSE(push_error(named_tensors{}));
  EXPECT_EQ(stats().second, 3u) << "an empty step without a loss";
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  EXPECT_EQ(stats(), (std::pair<double, uint64_t>{0, 0})) << "a load starts the count again";
}

TEST_F(parameter_server_test, a_load_sent_again_or_arriving_late_is_applied_once) {
  auto grads = seeded_grads(40);
  auto with_id = [&](uint64_t id) {
    auto state = fresh();
    state.load_id = id;
    return state;
  };
  ASSERT_FALSE(call<ok_atom>(load_atom::value, with_id(7)));
  auto [loaded, loaded_step] = fetch();
  struct {
    const char* what;
    uint64_t load_id;
    bool applied;
  } cases[] = {
    {"the same load, late, after a push", 7, false},
    {"another load", 8, true},
    {"that load again", 8, false},
    {"a load without an id: always applied", 0, true},
    {"again without an id", 0, true},
  };
  for (auto& c : cases) {
    push(5, ++seq_, grads);
    auto [before, step_before] = fetch();
    ASSERT_FALSE(call<ok_atom>(load_atom::value, with_id(c.load_id))) << c.what;
    auto [after, step_after] = fetch();
    EXPECT_EQ(step_after, c.applied ? loaded_step : step_before) << c.what;
    EXPECT_EQ(view(after, 0) == view(loaded, 0), c.applied) << c.what;
  }
}

TEST_F(parameter_server_test, save_answers_the_state_a_load_gave_it) {
  auto state = fresh();
  state.slots[0] = encode(list());
  state.optimizer_steps = 4;
  ASSERT_FALSE(call<ok_atom>(load_atom::value, state));
  ps_state saved;
  self->request(server, test::patience, save_atom::value)
    .receive([&](ps_state& s) { saved = std::move(s); },
             [](caf::error& err) { FAIL() << render(err); });
  EXPECT_EQ(saved.global_step, 7u);
  EXPECT_EQ(saved.optimizer_steps, 4u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(view(saved.values, i) == view(state.values, i));
    for (size_t k = 0; k < 2; ++k)
      EXPECT_TRUE(view(saved.slots[k], i) == view(state.slots[k], i));
  }
}

TEST_F(parameter_server_test, bad_calls_are_refused_and_change_nothing) {
  EXPECT_TRUE(is(call<named_tensors, uint64_t>(fetch_atom::value), errc::unavailable));
  EXPECT_TRUE(is(push_error(encode(list(), true)), errc::unavailable));
  EXPECT_TRUE(is(call<ps_state>(save_atom::value), errc::unavailable));
  ASSERT_FALSE(call<ok_atom>(load_atom::value, fresh()));
  auto [before, step] = fetch();

  auto short_values = fresh();
  short_values.values.values[1] = shared_floats{std::vector<float>{1, 2}};
  auto moments_of_another_model = fresh();
  moments_of_another_model.slots[0].names[0] = "z";
  auto slots_of_adagrad = fresh();
  slots_of_adagrad.slots.pop_back();
  auto renamed = encode(list(), true);
  renamed.names[1] = "c";
  auto reshaped = named_tensors{};
  append(reshaped, "a", matrix::Zero(2, 3));
  append(reshaped, "b", matrix::Zero(1, 4));
  a.grad(1, 1) = std::numeric_limits<float>::quiet_NaN();
  auto nan = encode(list(), true);
  struct {
    const char* what;
    caf::error err;
    errc expected;
  } cases[] = {
    {"values not rows x cols", call<ok_atom>(load_atom::value, short_values),
     errc::dimension_mismatch},
    {"moments of other variables", call<ok_atom>(load_atom::value, moments_of_another_model),
     errc::dimension_mismatch},
    {"one slot where Adam keeps two", call<ok_atom>(load_atom::value, slots_of_adagrad),
     errc::dimension_mismatch},
    {"a gradient of an unknown variable", push_error(renamed), errc::dimension_mismatch},
    {"a gradient of another shape", push_error(reshaped), errc::dimension_mismatch},
    {"a NaN gradient", push_error(nan), errc::non_finite},
  };
  for (auto& c : cases)
    EXPECT_TRUE(is(c.err, c.expected)) << c.what << ": " << render(c.err);
  auto [after, step_after] = fetch();
  EXPECT_EQ(step_after, step);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(view(after, i) == view(before, i)) << before.names[i];
}

} // namespace
} // namespace darcy::actors
