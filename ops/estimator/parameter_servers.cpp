#include "ops/estimator/parameter_servers.hpp"

#include <thread>

#include "actors/estimator/tensor_codec.hpp"
#include "messages/error.hpp"

namespace darcy::ops::estimator {

namespace {

/// Blocks on one request; the reply's values go to `f`.
template <class... Rs, class Self, class Handle, class F, class... Ts>
caf::error call(Self& self, const Handle& server, std::chrono::milliseconds timeout, F f,
                Ts&&... xs) {
  caf::error result;
  self->request(server, timeout, std::forward<Ts>(xs)...)
    .receive([&](Rs&... rs) { result = f(rs...); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

} // namespace

parameter_servers::parameter_servers(caf::actor_system& sys,
                                     std::vector<parameter_server_actor> servers,
                                     std::chrono::milliseconds timeout)
  : self_(sys), servers_(std::move(servers)), timeout_(timeout) {}

variable_list parameter_servers::share(const variable_list& vars, size_t s) const {
  variable_list out;
  for (size_t i = s; i < vars.size(); i += servers_.size())
    out.push_back(vars[i]);
  return out;
}

caf::error parameter_servers::initialize(const variable_list& vars,
                                         const compute::nn::adam<float>& opt, uint64_t step) {
  auto slots = opt.export_slots(vars);
  for (size_t s = 0; s < servers_.size(); ++s) {
    ps_state state;
    state.adam_steps = slots.steps;
    state.global_step = step;
    for (size_t i = s; i < vars.size(); i += servers_.size()) {
      actors::append(state.values, vars[i]->name, vars[i]->value);
      actors::append(state.m, vars[i]->name, slots.m[i]);
      actors::append(state.v, vars[i]->name, slots.v[i]);
    }
    if (auto err = call<ok_atom>(self_, servers_[s], timeout_, [](ok_atom) { return caf::error{}; },
                                 load_atom::value, std::move(state)))
      return err;
  }
  return {};
}

caf::expected<uint64_t> parameter_servers::pull(const variable_list& vars) {
  uint64_t global_step = 0;
  for (size_t s = 0; s < servers_.size(); ++s) {
    auto mine = share(vars, s);
    auto err = call<named_tensors, uint64_t>(
      self_, servers_[s], timeout_,
      [&](named_tensors& values, uint64_t step) -> caf::error {
        if (auto err = actors::check(values))
          return err;
        if (auto err = actors::check_matches(values, mine))
          return err;
        for (size_t i = 0; i < mine.size(); ++i)
          mine[i]->value = actors::view(values, i);
        if (s == 0)
          global_step = step;
        return {};
      },
      fetch_atom::value);
    if (err)
      return err;
  }
  return global_step;
}

caf::expected<uint64_t> parameter_servers::global_step() {
  uint64_t global_step = 0;
  if (auto err = call<named_tensors, uint64_t>(self_, servers_.front(), timeout_,
                                               [&](named_tensors&, uint64_t step) {
                                                 global_step = step;
                                                 return caf::error{};
                                               },
                                               fetch_atom::value))
    return err;
  return global_step;
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

caf::expected<uint64_t> parameter_servers::push(const variable_list& vars) {
  // Every server is asked before any answer is awaited, so the servers apply in parallel; a
  // blocking actor's receive of one response leaves the others in its mailbox.
  using handle = decltype(self_->request(servers_.front(), timeout_, backward_atom::value,
                                         named_tensors{}));
  std::vector<handle> pending;
  for (size_t s = 0; s < servers_.size(); ++s)
    pending.push_back(self_->request(servers_[s], timeout_, backward_atom::value,
                                     actors::encode(share(vars, s), true)));
  caf::expected<uint64_t> first{caf::error{}};
  caf::error failure;
  for (size_t s = 0; s < pending.size(); ++s)
    pending[s].receive(
      [&](uint64_t step) {
        if (s == 0)
          first = step;
      },
      [&](caf::error& err) {
        if (!failure)
          failure = std::move(err);
      });
  if (failure)
    return failure;
  return first;
}

caf::expected<uint64_t> parameter_servers::fetch_state(const variable_list& vars,
                                                       compute::nn::adam<float>& opt) {
  compute::nn::adam_slots<float> slots;
  slots.m.resize(vars.size());
  slots.v.resize(vars.size());
  uint64_t global_step = 0;
  for (size_t s = 0; s < servers_.size(); ++s) {
    auto mine = share(vars, s);
    auto err = call<ps_state>(
      self_, servers_[s], timeout_,
      [&](ps_state& state) -> caf::error {
        for (auto* t : {&state.values, &state.m, &state.v}) {
          if (auto err = actors::check(*t))
            return err;
          if (auto err = actors::check_matches(*t, mine))
            return err;
        }
        for (size_t j = 0, i = s; j < mine.size(); ++j, i += servers_.size()) {
          mine[j]->value = actors::view(state.values, j);
          slots.m[i] = actors::view(state.m, j);
          slots.v[i] = actors::view(state.v, j);
        }
        if (s == 0) {
          global_step = state.global_step;
          slots.steps = state.adam_steps;
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
