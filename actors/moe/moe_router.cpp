#include "actors/moe/moe_router.hpp"

#include <chrono>
#include <cmath>
#include <functional>

#include "actors/checkpoint_coordinator.hpp"
#include "actors/fan_out.hpp"
#include "compute/finite.hpp"
#include "compute/moe/moe_layer.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"
#include "stores/checkpoint/parameter_part.hpp"

namespace darcy::actors {

namespace {

using compute::nn::matrix;
using const_rows = Eigen::Map<const matrix>;

/// How long an expert may take for one step's block.
/// The timeout of `attempt` (0, 1, ...) of a request to an expert; `scale` for slow ones.
std::chrono::milliseconds attempt_timeout(const moe_router_config& cfg, uint32_t attempt,
                                          int64_t scale = 1) {
  return std::chrono::milliseconds{cfg.expert_attempt_ms * scale * (attempt + 1)};
}

retry_policy expert_retries(const moe_router_config& cfg) {
  return {cfg.expert_attempts, {}};
}

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
  st.inflight = fan_out<row_block>(
    targets,
    [self, kind, step, source](size_t e, uint32_t attempt) {
      auto& plan = self->state.plan;
      auto block = block_of(step, *source, plan.offsets[e], plan.expert_batch(e));
      auto& expert = self->state.experts[e];
      auto timeout = attempt_timeout(self->state.config, attempt);
      return kind == phase_kind::forward
               ? self->request(expert, timeout, forward_atom::value, std::move(block))
               : self->request(expert, timeout, backward_atom::value, std::move(block));
    },
    [self, results](size_t e, row_block& answer) {
      auto& plan = self->state.plan;
      results->middleRows(plan.offsets[e], plan.expert_batch(e)) =
        const_rows{answer.values.values().data(), answer.rows, results->cols()};
    },
    [self, kind, results, done](caf::error err) mutable {
      if (err) {
        fail_phase(self, make_error(errc::unavailable, std::string{"an expert failed the "} +
                                                         name_of(kind) + ": " + render(err)));
        return;
      }
      done(*results);
    },
    expert_retries(st.config));
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
  auto what = std::string{name_of(kind)} + " of replica " + std::to_string(replica) + " for step " +
              std::to_string(block.step);
  if (!st.gate)
    return make_error(errc::unavailable, "the router did not start");
  if (st.lost)
    return st.lost;
  if (st.checkpointing)
    return make_error(errc::invalid_argument, what + ": a checkpoint save or load is running");
  if (replica >= st.config.replicas)
    return make_error(errc::invalid_argument, what + ": the router combines " +
                                                std::to_string(st.config.replicas) + " replicas");
  if (block.values.size() != static_cast<size_t>(block.rows) * st.config.layer.dim)
    return make_error(errc::dimension_mismatch, what + ": " + std::to_string(block.values.size()) +
                                                  " values are not " + std::to_string(block.rows) +
                                                  " rows of " +
                                                  std::to_string(st.config.layer.dim));
  if (!compute::all_finite(block.values.values()))
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
    return make_error(errc::dimension_mismatch, what + ": " + std::to_string(block.rows) +
                                                  " rows for a forward of " +
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

/// errc::invalid_argument while a step or a checkpoint is in progress.
caf::error between_steps(moe_router_state& st, const char* what) {
  if (!st.gate)
    return make_error(errc::unavailable, "the router did not start");
  if (st.lost)
    return st.lost;
  if (st.waiting || st.forwarded)
    return make_error(errc::invalid_argument,
                      std::string{"moe router: "} + what + " between steps: step " +
                        std::to_string(st.waiting ? st.waiting->step : *st.forwarded) +
                        " is in progress");
  if (st.checkpointing)
    return make_error(errc::invalid_argument, std::string{"moe router: "} + what +
                                                ": a checkpoint save or load is running");
  return {};
}

/// Writes the gate's part as `prefix`/gate.params under `path`.
caf::expected<file_info> save_gate(moe_router_pointer self, const std::string& path,
                                   const std::string& prefix) {
  auto& st = self->state;
  return stores::write_parameter_part(stores::checkpoint_dir{path}, prefix + "/gate.params",
                                      st.gate->parameters(), *st.optimizer);
}

/// The request that asks expert e to save its part as `prefix`/expert-e under `path`.
auto save_expert(moe_router_pointer self, std::string path) {
  return [self, path](size_t e, const std::string& prefix, uint32_t attempt) {
    return self->request(self->state.experts[e], attempt_timeout(self->state.config, attempt, 10),
                         save_atom::value, path, prefix + "/expert-" + std::to_string(e));
  };
}

/// Writes the gate's part, then asks every expert to save its own under `prefix`; done gets the
/// experts' parts in expert order and the gate's last. For a layer saved inside another
/// checkpoint (save_as_expert); a checkpoint of its own goes through the coordinator (save).
void save_layer(moe_router_pointer self, const std::string& path, const std::string& prefix,
                std::function<void(caf::expected<std::vector<file_info>>)> done) {
  auto& st = self->state;
  auto gate = save_gate(self, path, prefix);
  if (!gate)
    return done(std::move(gate.error()));
  st.checkpointing = true;
  auto parts = std::make_shared<std::vector<file_info>>(st.experts.size() + 1);
  parts->back() = *gate;
  st.inflight = fan_out<file_info>(
    all_targets(st.experts.size()),
    [request = save_expert(self, path), prefix](size_t e, uint32_t attempt) {
      return request(e, prefix, attempt);
    },
    [parts](size_t e, file_info& part) { (*parts)[e] = std::move(part); },
    [self, parts, done](caf::error err) {
      self->state.checkpointing = false;
      if (err)
        return done(std::move(err));
      done(std::move(*parts));
    },
    expert_retries(st.config));
}

/// Restores the gate from the last of `parts` and expert e from parts[e].
void load_layer(moe_router_pointer self, const std::string& path,
                std::shared_ptr<const std::vector<file_info>> parts,
                std::function<void(caf::error)> done) {
  auto& st = self->state;
  auto experts = st.experts.size();
  if (parts->size() != experts + 1)
    return done(
      make_error(errc::invalid_config, "the checkpoint holds " + std::to_string(parts->size() - 1) +
                                         " experts; this layer has " + std::to_string(experts)));
  if (auto err = stores::read_parameter_part(stores::checkpoint_dir{path}, parts->back(),
                                             st.gate->parameters(), *st.optimizer))
    return done(std::move(err));
  st.checkpointing = true;
  st.inflight = fan_out<ok_atom>(
    all_targets(experts),
    [self, path, parts](size_t e, uint32_t attempt) {
      return self->request(self->state.experts[e], attempt_timeout(self->state.config, attempt, 10),
                           load_atom::value, path, (*parts)[e]);
    },
    [](size_t, ok_atom) {},
    [self, done](caf::error err) {
      self->state.checkpointing = false;
      done(std::move(err));
    },
    expert_retries(st.config));
}

/// One checkpoint of the layer through the checkpoint coordinator: the gate's part, then every
/// expert's under the same fresh id, the manifest (the experts' parts in expert order, the
/// gate's last) committed last.
caf::result<checkpoint_manifest> save(moe_router_pointer self, const moe_save_request& req) {
  auto& st = self->state;
  if (auto err = between_steps(st, "save"))
    return err;
  stores::checkpoint_dir root{req.root};
  if (auto err = root.prepare())
    return err;
  auto id = stores::checkpoint_dir::new_id("moe");
  auto not_taken = [](const caf::error& err) {
    return make_error(errc::io_error,
                      "moe checkpoint not taken, the previous one stays current: " + render(err));
  };
  auto gate = save_gate(self, req.root, id);
  if (!gate) {
    root.discard(id);
    return not_taken(gate.error());
  }
  auto promise = self->make_response_promise<checkpoint_manifest>();
  auto experts = st.experts.size();
  st.checkpointing = true;
  st.inflight = take_checkpoint_as<file_info>(
    root, id, req.keep, experts, save_expert(self, req.root),
    [req, gate = *gate, experts](std::vector<file_info>& parts) {
      checkpoint_manifest m;
      m.service = moe_service_name;
      m.step = req.step;
      m.shard_count = static_cast<uint32_t>(experts);
      m.parts = std::move(parts);
      m.parts.push_back(gate);
      m.extra = req.extra;
      return m;
    },
    [self, promise, not_taken](caf::expected<checkpoint_manifest> m) mutable {
      self->state.checkpointing = false;
      if (m)
        promise.deliver(std::move(*m));
      else
        promise.deliver(not_taken(m.error()));
    },
    expert_retries(st.config));
  return promise;
}

caf::result<checkpoint_manifest> load(moe_router_pointer self, const std::string& path) {
  auto& st = self->state;
  if (auto err = between_steps(st, "load"))
    return err;
  auto manifest = stores::checkpoint_dir{path}.read_manifest();
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->service != moe_service_name)
    return make_error(errc::invalid_config, path + " holds a checkpoint of service '" +
                                              manifest->service + "', not of a MoE layer");
  auto promise = self->make_response_promise<checkpoint_manifest>();
  auto m = std::make_shared<checkpoint_manifest>(std::move(*manifest));
  auto parts = std::make_shared<const std::vector<file_info>>(m->parts);
  load_layer(self, path, parts, [path, m, promise](caf::error err) mutable {
    if (err)
      promise.deliver(make_error(errc::invalid_config, path + ": checkpoint " + m->checkpoint +
                                                         " not restored: " + render(err)));
    else
      promise.deliver(std::move(*m));
  });
  return promise;
}

/// As an expert of another router: the layer saved under `name`, with an index part
/// `name`.params that lists its parts.
caf::result<file_info> save_as_expert(moe_router_pointer self, const std::string& path,
                                      const std::string& name) {
  auto& st = self->state;
  if (st.saved_name == name)
    return st.saved_part;
  if (auto err = between_steps(st, "save"))
    return err;
  auto promise = self->make_response_promise<file_info>();
  save_layer(self, path, name, [=](caf::expected<std::vector<file_info>> parts) mutable {
    if (!parts) {
      promise.deliver(std::move(parts.error()));
      return;
    }
    auto index = stores::write_part_index(stores::checkpoint_dir{path}, name + ".params", *parts);
    if (!index) {
      promise.deliver(std::move(index.error()));
      return;
    }
    self->state.saved_name = name;
    self->state.saved_part = *index;
    promise.deliver(*index);
  });
  return promise;
}

caf::result<ok_atom> load_as_expert(moe_router_pointer self, const std::string& path,
                                    const file_info& part) {
  if (auto err = between_steps(self->state, "load"))
    return err;
  auto parts = stores::read_part_index(stores::checkpoint_dir{path}, part);
  if (!parts)
    return std::move(parts.error());
  auto promise = self->make_response_promise<ok_atom>();
  load_layer(self, path, std::make_shared<const std::vector<file_info>>(std::move(*parts)),
             [promise](caf::error err) mutable {
               if (err)
                 promise.deliver(std::move(err));
               else
                 promise.deliver(ok_atom::value);
             });
  return promise;
}

/// The expert interface: the one replica's request.
caf::result<row_block> as_expert(moe_router_pointer self, phase_kind kind, row_block block) {
  if (self->state.config.replicas != 1)
    return make_error(errc::invalid_argument, "a router of " +
                                                std::to_string(self->state.config.replicas) +
                                                " replicas is no expert: give the replica");
  return arrive(self, kind, 0, std::move(block));
}

} // namespace

moe_router_actor::behavior_type moe_router(moe_router_pointer self, moe_router_config config,
                                           std::vector<expert_actor> experts) {
  auto& st = self->state;
  st.config = config;
  auto adam = compute::adam_optimizer(static_cast<float>(config.learning_rate));
  auto err = compute::moe::validate(config.layer);
  if (!err)
    err = compute::validate(adam);
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
    for (auto& e : st.experts)
      self->monitor(e);
    self->set_down_handler([self](caf::down_msg& msg) {
      auto& st = self->state;
      for (size_t e = 0; e < st.experts.size(); ++e) {
        if (st.experts[e].address() != msg.source || st.lost)
          continue;
        st.lost = make_error(errc::unavailable, "expert " + std::to_string(e) + " is down (" +
                                                  render(msg.reason) +
                                                  "): restore the layer from its checkpoint");
        if (st.inflight)
          st.inflight->fail(st.lost);
        fail_phase(self, st.lost);
      }
    });
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
    [self](save_atom, const moe_save_request& req) { return save(self, req); },
    [self](load_atom, const std::string& root) { return load(self, root); },
    [self](save_atom, const std::string& root, const std::string& name) {
      return save_as_expert(self, root, name);
    },
    [self](load_atom, const std::string& root, const file_info& part) {
      return load_as_expert(self, root, part);
    },
  };
}

} // namespace darcy::actors
