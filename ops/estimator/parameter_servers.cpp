#include "ops/estimator/parameter_servers.hpp"

#include <algorithm>
#include <thread>
#include <tuple>
#include <utility>

#include "actors/estimator/tensor_codec.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"

namespace darcy::ops::estimator {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

bool timed_out(const caf::error& err) {
  return err == caf::sec::request_timeout;
}

} // namespace

parameter_servers::parameter_servers(caf::actor_system& sys,
                                     std::vector<parameter_server_actor> servers,
                                     milliseconds timeout, milliseconds attempt_timeout)
  : system_(&sys),
    servers_(std::move(servers)),
    timeout_(timeout),
    attempt_timeout_(attempt_timeout.count() > 0 ? std::min(attempt_timeout, timeout) : timeout),
    client_(runtime::random_request_id()) {
}

template <class... Rs, class F, class... Ts>
caf::error parameter_servers::call(size_t s, milliseconds attempt, F f, const Ts&... xs) {
  auto deadline = steady_clock::now() + timeout_;
  caf::scoped_actor self{*system_};
  for (;;) {
    caf::error result;
    self->request(servers_[s], runtime::attempt_wait(attempt, deadline), xs...)
      .receive([&](Rs&... rs) { result = f(rs...); },
               [&](caf::error& err) { result = std::move(err); });
    if (!timed_out(result) || steady_clock::now() >= deadline)
      return result;
  }
}

template <class... Rs, class Args, class F>
caf::error parameter_servers::call_all(Args args, F f) {
  caf::scoped_actor self{*system_};
  auto send = [&](size_t s, std::chrono::milliseconds wait) {
    return std::apply([&](const auto&... xs) { return self->request(servers_[s], wait, xs...); },
                      args(s));
  };
  using handle = decltype(send(0, timeout_));
  std::vector<bool> answered(servers_.size(), false);
  auto deadline = steady_clock::now() + timeout_;
  for (;;) {
    auto wait = runtime::attempt_wait(attempt_timeout_, deadline);
    std::vector<std::pair<size_t, handle>> pending;
    for (size_t s = 0; s < servers_.size(); ++s)
      if (!answered[s])
        pending.emplace_back(s, send(s, wait));
    caf::error failure, timeout;
    for (auto& [s, h] : pending)
      h.receive(
        [&, s = s](Rs&... rs) {
          answered[s] = true;
          if (auto err = f(s, rs...); err && !failure)
            failure = std::move(err);
        },
        [&](caf::error& err) {
          auto& slot = timed_out(err) ? timeout : failure;
          if (!slot)
            slot = std::move(err);
        });
    if (failure)
      return failure;
    if (!timeout)
      return {};
    if (steady_clock::now() >= deadline)
      return timeout;
  }
}

caf::expected<std::vector<std::vector<size_t>>> parameter_servers::owned(
  const variable_list& vars) const {
  auto where = place_variables(placement_, vars, count());
  if (!where)
    return std::move(where.error());
  std::vector<std::vector<size_t>> out(servers_.size());
  for (size_t i = 0; i < vars.size(); ++i)
    out[(*where)[i]].push_back(i);
  return out;
}

caf::expected<std::vector<variable_list>> parameter_servers::shares(
  const variable_list& vars) const {
  auto positions = owned(vars);
  if (!positions)
    return std::move(positions.error());
  std::vector<variable_list> out(servers_.size());
  for (size_t s = 0; s < out.size(); ++s)
    for (auto i : (*positions)[s])
      out[s].push_back(vars[i]);
  return out;
}

caf::error parameter_servers::initialize(const variable_list& vars,
                                         const compute::nn::optimizer& opt, uint64_t step) {
  auto positions = owned(vars);
  if (!positions)
    return std::move(positions.error());
  auto slots = opt.export_slots(vars);
  for (size_t s = 0; s < servers_.size(); ++s) {
    ps_state state;
    state.optimizer_steps = slots.steps;
    state.slots.resize(slots.slots.size());
    state.global_step = step;
    state.load_id = runtime::random_request_id();
    for (auto i : (*positions)[s]) {
      actors::append(state.values, vars[i]->name, vars[i]->value);
      for (size_t k = 0; k < slots.slots.size(); ++k)
        actors::append(state.slots[k], vars[i]->name, slots.slots[k][i]);
    }
    if (auto err = call<ok_atom>(
          s, attempt_timeout_, [](ok_atom) { return caf::error{}; }, load_atom::value, state))
      return err;
  }
  return {};
}

caf::expected<uint64_t> parameter_servers::pull(const variable_list& vars) {
  uint64_t global_step = 0;
  auto all = shares(vars);
  if (!all)
    return std::move(all.error());
  auto err = call_all<named_tensors, uint64_t>(
    [](size_t) { return std::make_tuple(fetch_atom::value); },
    [&](size_t s, named_tensors& values, uint64_t step) -> caf::error {
      auto& mine = (*all)[s];
      if (auto err = actors::check(values))
        return err;
      if (auto err = actors::check_matches(values, mine))
        return err;
      for (size_t i = 0; i < mine.size(); ++i)
        mine[i]->value = actors::view(values, i);
      if (s == 0)
        global_step = step;
      return {};
    });
  if (err)
    return err;
  return global_step;
}

caf::expected<uint64_t> parameter_servers::global_step() {
  uint64_t global_step = 0;
  if (auto err = call<uint64_t>(
        0, attempt_timeout_,
        [&](uint64_t step) {
          global_step = step;
          return caf::error{};
        },
        step_atom::value))
    return err;
  return global_step;
}

caf::expected<loss_totals> parameter_servers::losses() {
  loss_totals out;
  if (auto err = call<double, uint64_t>(
        0, attempt_timeout_,
        [&](double sum, uint64_t count) {
          out = {sum, count};
          return caf::error{};
        },
        stats_atom::value))
    return err;
  return out;
}

caf::expected<uint64_t> parameter_servers::pull_when_ready(const variable_list& vars,
                                                           std::chrono::milliseconds patience) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  for (auto wait = std::chrono::milliseconds(5);; wait = std::min(wait * 2, timeout_)) {
    auto step = pull(vars);
    if (step || !is(step.error(), errc::unavailable) ||
        std::chrono::steady_clock::now() + wait > deadline)
      return step;
    std::this_thread::sleep_for(wait);
  }
}

caf::expected<uint64_t> parameter_servers::push(const variable_list& vars, double loss) {
  auto all = shares(vars);
  if (!all)
    return std::move(all.error());
  auto seq = ++seq_;
  std::vector<named_tensors> grads;
  for (auto& mine : *all)
    grads.push_back(actors::encode(mine, true));
  // A server asked again (no answer within the attempt timeout) gets the same seq, and applies
  // the push once.
  uint64_t first = 0;
  auto err = call_all<uint64_t>(
    [&](size_t s) {
      return std::make_tuple(backward_atom::value, client_, seq, std::cref(grads[s]), loss);
    },
    [&](size_t s, uint64_t step) {
      if (s == 0)
        first = step;
      return caf::error{};
    });
  if (err)
    return err;
  return first;
}

caf::expected<uint64_t> parameter_servers::fetch_state(const variable_list& vars,
                                                       compute::nn::optimizer& opt) {
  compute::nn::optimizer_slots slots;
  slots.slots.assign(opt.slot_count(), std::vector<compute::nn::matrix>(vars.size()));
  uint64_t global_step = 0;
  auto positions = owned(vars);
  if (!positions)
    return std::move(positions.error());
  for (size_t s = 0; s < servers_.size(); ++s) {
    auto& where = (*positions)[s];
    variable_list mine;
    for (auto i : where)
      mine.push_back(vars[i]);
    auto err = call<ps_state>(
      s, attempt_timeout_,
      [&](ps_state& state) -> caf::error {
        if (state.slots.size() != opt.slot_count())
          return make_error(errc::dimension_mismatch,
                            "parameter server " + std::to_string(s) + " holds " +
                              std::to_string(state.slots.size()) + " optimizer slots, not " +
                              std::to_string(opt.slot_count()));
        std::vector<const named_tensors*> tensors{&state.values};
        for (auto& t : state.slots)
          tensors.push_back(&t);
        for (auto* t : tensors) {
          if (auto err = actors::check(*t))
            return err;
          if (auto err = actors::check_matches(*t, mine))
            return err;
        }
        for (size_t j = 0; j < where.size(); ++j) {
          mine[j]->value = actors::view(state.values, j);
          for (size_t k = 0; k < state.slots.size(); ++k)
            slots.slots[k][where[j]] = actors::view(state.slots[k], j);
        }
        if (s == 0) {
          global_step = state.global_step;
          slots.steps = state.optimizer_steps;
        }
        return {};
      },
      save_atom::value);
    if (err)
      return err;
  }
  opt.import_slots(vars, std::move(slots));
  return global_step;
}

} // namespace darcy::ops::estimator
