#include "actors/moe/moe_router.hpp"

#include <chrono>
#include <cmath>

#include "actors/fan_out.hpp"
#include "compute/moe/moe_layer.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

using compute::nn::matrix;
using const_rows = Eigen::Map<const matrix>;

/// How long an expert may take for one step's block.
constexpr std::chrono::seconds expert_timeout{120};

enum class phase_kind { forward, backward };

const char* name_of(phase_kind k) {
  return k == phase_kind::forward ? "forward" : "backward";
}

/// A row_block of `rows` rows copied from `m` starting at row `first`.
row_block block_of(uint64_t step, const matrix& m, Eigen::Index first, Eigen::Index rows) {
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(rows * m.cols()));
  Eigen::Map<matrix>{span.data(), rows, m.cols()} = m.middleRows(first, rows);
  return row_block{step, static_cast<uint32_t>(rows), std::move(values)};
}

/// Fails every request of the phase in progress.
void fail_phase(moe_router_pointer self, const caf::error& err) {
  auto& st = self->state;
  if (!st.waiting)
    return;
  for (auto& p : st.waiting->promises)
    p.deliver(err);
  st.waiting.reset();
  st.forwarded.reset();
}

/// The replicas' blocks stacked in replica order; records each replica's rows.
matrix stack(moe_router_state& st) {
  Eigen::Index total = 0;
  for (auto& b : st.waiting->blocks)
    total += b->rows;
  matrix all(total, st.config.layer.dim);
  st.replica_rows.clear();
  Eigen::Index at = 0;
  for (auto& b : st.waiting->blocks) {
    all.middleRows(at, b->rows) = const_rows{b->values.values().data(), b->rows, all.cols()};
    st.replica_rows.push_back(b->rows);
    at += b->rows;
  }
  return all;
}

/// Answers replica r with its rows of `m`, and ends the phase.
void answer(moe_router_pointer self, const matrix& m) {
  auto& st = self->state;
  auto phase = std::move(*st.waiting);
  st.waiting.reset();
  Eigen::Index at = 0;
  for (size_t r = 0; r < phase.promises.size(); ++r) {
    phase.promises[r].deliver(block_of(phase.step, m, at, st.replica_rows[r]));
    at += st.replica_rows[r];
  }
}

/// Sends each expert with examples its slots of `rows` (forward: inputs, backward: output
/// gradients) and calls done(results) with every expert's answer in slot order.
template <class Done>
void ask_experts(moe_router_pointer self, phase_kind kind, uint64_t step, const matrix& rows,
                 Done done) {
  auto& st = self->state;
  std::vector<size_t> targets;
  for (uint32_t e = 0; e < st.plan.experts(); ++e)
    if (st.plan.expert_batch(e) > 0)
      targets.push_back(e);
  auto results = std::make_shared<matrix>(rows.rows(), rows.cols());
  // Shared, not captured by value: fan_out copies the request functor for every target.
  auto source = std::make_shared<const matrix>(rows);
  fan_out<row_block>(
    targets,
    [self, kind, step, source](size_t e) {
      auto& plan = self->state.plan;
      auto block = block_of(step, *source, plan.offsets[e], plan.expert_batch(e));
      auto& expert = self->state.experts[e];
      return kind == phase_kind::forward
               ? self->request(expert, expert_timeout, forward_atom::value, std::move(block))
               : self->request(expert, expert_timeout, backward_atom::value, std::move(block));
    },
    [self, results](size_t e, row_block& answer) {
      auto& plan = self->state.plan;
      results->middleRows(plan.offsets[e], plan.expert_batch(e)) =
        const_rows{answer.values.values().data(), answer.rows, results->cols()};
    },
    [self, kind, results, done](caf::error err) mutable {
      if (err) {
        fail_phase(self, make_error(errc::unavailable,
                                    std::string{"an expert failed the "} + name_of(kind) + ": " +
                                      render(err)));
        return;
      }
      done(*results);
    });
}

void run_forward(moe_router_pointer self) {
  auto& st = self->state;
  auto step = st.waiting->step;
  auto x = stack(st);
  st.gate->set_step(step);
  st.plan = compute::moe::make_plan<float>(st.gate->forward(x));
  auto in = compute::moe::dispatch<float>(x, st.plan);
  ask_experts(self, phase_kind::forward, step, in, [self, step](const matrix& out) {
    auto& st = self->state;
    st.out = out;
    st.forwarded = step;
    answer(self, compute::moe::combine<float>(st.out, st.plan));
  });
}

void run_backward(moe_router_pointer self) {
  auto& st = self->state;
  auto step = st.waiting->step;
  auto dy = stack(st);
  matrix dout, dgates;
  compute::moe::combine_backward<float>(dy, st.out, st.plan, dout, dgates);
  ask_experts(self, phase_kind::backward, step, dout, [self, dgates](const matrix& din) {
    auto& st = self->state;
    matrix dx = compute::moe::dispatch_backward<float>(din, st.plan);
    dx += st.gate->backward(dgates);
    st.optimizer->step(st.gate->parameters());
    st.forwarded.reset();
    ++st.steps;
    answer(self, dx);
  });
}

caf::result<row_block> arrive(moe_router_pointer self, phase_kind kind, uint32_t replica,
                              row_block block) {
  auto& st = self->state;
  auto what = std::string{name_of(kind)} + " of replica " + std::to_string(replica) +
              " for step " + std::to_string(block.step);
  if (!st.gate)
    return make_error(errc::unavailable, "the router did not start");
  if (replica >= st.config.replicas)
    return make_error(errc::invalid_argument,
                      what + ": the router combines " + std::to_string(st.config.replicas) +
                        " replicas");
  if (block.values.size() != static_cast<size_t>(block.rows) * st.config.layer.dim)
    return make_error(errc::dimension_mismatch,
                      what + ": " + std::to_string(block.values.size()) + " values are not " +
                        std::to_string(block.rows) + " rows of " +
                        std::to_string(st.config.layer.dim));
  for (auto v : block.values.values())
    if (!std::isfinite(v))
      return make_error(errc::non_finite,
                        what + ": a value is NaN or infinite; send the block again without it");
  if (kind == phase_kind::forward && st.forwarded)
    return make_error(errc::invalid_argument,
                      what + ": step " + std::to_string(*st.forwarded) + " awaits its backward");
  if (kind == phase_kind::backward && (!st.forwarded || *st.forwarded != block.step))
    return make_error(errc::invalid_argument, what + " without its forward");
  if (!st.waiting) {
    st.waiting.emplace();
    st.waiting->step = block.step;
    st.waiting->blocks.resize(st.config.replicas);
    st.waiting->promises.resize(st.config.replicas);
  } else if (st.waiting->step != block.step) {
    return make_error(errc::invalid_argument,
                      what + ": step " + std::to_string(st.waiting->step) + " is in progress");
  }
  auto& phase = *st.waiting;
  if (phase.blocks[replica])
    return make_error(errc::invalid_argument, what + ": sent twice");
  if (kind == phase_kind::backward && block.rows != st.replica_rows[replica])
    return make_error(errc::dimension_mismatch,
                      what + ": " + std::to_string(block.rows) + " rows for a forward of " +
                        std::to_string(st.replica_rows[replica]));
  phase.blocks[replica] = std::move(block);
  auto promise = self->make_response_promise<row_block>();
  phase.promises[replica] = promise;
  if (++phase.arrived == st.config.replicas) {
    if (kind == phase_kind::forward)
      run_forward(self);
    else
      run_backward(self);
  }
  return promise;
}

/// The expert interface: the one replica's request.
caf::result<row_block> as_expert(moe_router_pointer self, phase_kind kind, row_block block) {
  if (self->state.config.replicas != 1)
    return make_error(errc::invalid_argument,
                      "a router of " + std::to_string(self->state.config.replicas) +
                        " replicas is no expert: give the replica");
  return arrive(self, kind, 0, std::move(block));
}

} // namespace

moe_router_actor::behavior_type moe_router(moe_router_pointer self, moe_router_config config,
                                           std::vector<expert_actor> experts) {
  auto& st = self->state;
  st.config = config;
  compute::nn::adam_config adam{.learning_rate = config.learning_rate};
  auto err = compute::moe::validate(config.layer);
  if (!err)
    err = compute::nn::validate(adam);
  if (!err && config.replicas == 0)
    err = plain_error{errc::invalid_config, "moe router: replicas must be at least 1"};
  if (!err && experts.size() != config.layer.gating.experts)
    err = plain_error{errc::invalid_config,
                      "moe router: " + std::to_string(experts.size()) + " expert actors for " +
                        std::to_string(config.layer.gating.experts) + " experts"};
  if (err) {
    self->quit(make_error(err));
  } else {
    st.experts = std::move(experts);
    st.gate.emplace(config.layer.dim, config.layer.gating);
    st.optimizer.emplace(adam);
  }
  return {
    [self](forward_atom, uint32_t replica, row_block block) {
      return arrive(self, phase_kind::forward, replica, std::move(block));
    },
    [self](backward_atom, uint32_t replica, row_block block) {
      return arrive(self, phase_kind::backward, replica, std::move(block));
    },
    [self](forward_atom, row_block block) {
      return as_expert(self, phase_kind::forward, std::move(block));
    },
    [self](backward_atom, row_block block) {
      return as_expert(self, phase_kind::backward, std::move(block));
    },
    [self](status_atom) {
      auto& st = self->state;
      moe_router_status s;
      s.steps = st.steps;
      for (uint32_t e = 0; e < st.plan.experts(); ++e)
        s.expert_batch.push_back(st.plan.expert_batch(e));
      s.aux_loss = st.gate ? st.gate->aux_loss() : 0.0;
      return s;
    },
  };
}

} // namespace darcy::actors
