#include "actors/estimator/parameter_server.hpp"

#include <cmath>

#include "actors/estimator/tensor_codec.hpp"
#include "compute/finite.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

using compute::nn::matrix;

caf::error not_loaded(const parameter_server_state& st) {
  return make_error(errc::unavailable, "parameter server " + std::to_string(st.config.index) +
                                         " holds no variables yet: the chief has not loaded it");
}

caf::result<ok_atom> load(parameter_server_pointer self, const ps_state& state) {
  auto& st = self->state;
  if (state.load_id != 0 && state.load_id == st.last_load)
    return ok_atom::value;
  if (state.slots.size() != st.optimizer->slot_count())
    return make_error(errc::dimension_mismatch,
                      "parameter server " + std::to_string(st.config.index) + ": a load with " +
                        std::to_string(state.slots.size()) + " optimizer slots where " +
                        to_string(st.config.optimizer.kind) + " keeps " +
                        std::to_string(st.optimizer->slot_count()));
  if (auto err = check(state.values))
    return err;
  for (auto& t : state.slots)
    if (auto err = check(t))
      return err;
  std::deque<compute::nn::parameter<float>> variables;
  compute::nn::parameter_list<float> list;
  for (size_t i = 0; i < state.values.names.size(); ++i) {
    variables.emplace_back(state.values.names[i], matrix{view(state.values, i)});
    list.push_back(&variables.back());
  }
  compute::nn::optimizer_slots slots;
  slots.steps = state.optimizer_steps;
  for (auto& t : state.slots) {
    if (auto err = check_matches(t, list))
      return err;
    auto& slot = slots.slots.emplace_back();
    for (size_t i = 0; i < list.size(); ++i)
      slot.emplace_back(view(t, i));
  }
  st.variables = std::move(variables);
  st.list = std::move(list);
  st.optimizer->import_slots(st.list, std::move(slots));
  st.global_step = state.global_step;
  st.loss_sum = 0;
  st.losses = 0;
  st.loaded = true;
  st.last_load = state.load_id;
  return ok_atom::value;
}

/// Counts one step and its loss.
uint64_t count_step(parameter_server_state& st, double loss) {
  if (std::isfinite(loss)) {
    st.loss_sum += loss;
    ++st.losses;
  }
  return ++st.global_step;
}

caf::result<uint64_t> apply(parameter_server_pointer self, const named_tensors& grads,
                            double loss) {
  auto& st = self->state;
  if (grads.names.empty())
    return count_step(st, loss);
  if (auto err = check(grads))
    return err;
  if (auto err = check_matches(grads, st.list))
    return err;
  for (size_t i = 0; i < st.list.size(); ++i)
    if (!compute::all_finite(view(grads, i)))
      return make_error(errc::non_finite, "parameter server " + std::to_string(st.config.index) +
                                            ": the gradient of '" + grads.names[i] +
                                            "' is NaN or infinite; nothing applied");
  for (size_t i = 0; i < st.list.size(); ++i)
    st.list[i]->grad = view(grads, i);
  st.optimizer->set_learning_rate(
    compute::scheduled_rate(st.config.optimizer.learning_rate, st.config.schedule, st.global_step));
  st.optimizer->step(st.list);
  return count_step(st, loss);
}

caf::result<ps_state> save(parameter_server_pointer self) {
  auto& st = self->state;
  if (!st.loaded)
    return not_loaded(st);
  ps_state out;
  out.values = encode(st.list);
  auto slots = st.optimizer->export_slots(st.list);
  for (auto& slot : slots.slots) {
    auto& t = out.slots.emplace_back();
    for (size_t i = 0; i < st.list.size(); ++i)
      append(t, st.list[i]->name, slot[i]);
  }
  out.optimizer_steps = slots.steps;
  out.global_step = st.global_step;
  return out;
}

} // namespace

parameter_server_actor::behavior_type parameter_server(parameter_server_pointer self,
                                                       ps_config config) {
  auto& st = self->state;
  st.config = config;
  auto err = compute::validate(config.optimizer);
  if (!err)
    err = compute::validate(config.schedule);
  if (err)
    self->quit(make_error(err));
  else
    st.optimizer.emplace(config.optimizer);
  return {
    [self](load_atom, const ps_state& state) { return load(self, state); },
    [self](fetch_atom) -> caf::result<named_tensors, uint64_t> {
      auto& st = self->state;
      if (!st.loaded)
        return not_loaded(st);
      return {encode(st.list), st.global_step};
    },
    [self](step_atom) -> caf::result<uint64_t> {
      auto& st = self->state;
      if (!st.loaded)
        return not_loaded(st);
      return st.global_step;
    },
    [self](backward_atom, uint64_t client, uint64_t seq, const named_tensors& grads,
           double loss) -> caf::result<uint64_t> {
      auto& st = self->state;
      if (!st.loaded)
        return not_loaded(st);
      if (client == 0)
        return apply(self, grads, loss);
      auto& last = st.pushes[client];
      if (seq <= last.first)
        return last.second;
      auto step = apply(self, grads, loss);
      if (step.flag == caf::rt_value)
        last = {seq, st.global_step};
      return step;
    },
    [self](stats_atom) -> caf::result<double, uint64_t> {
      auto& st = self->state;
      if (!st.loaded)
        return not_loaded(st);
      return {st.loss_sum, st.losses};
    },
    [self](save_atom) { return save(self); },
  };
}

} // namespace darcy::actors
