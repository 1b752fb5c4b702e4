#include "actors/moe/expert_actor.hpp"

#include "compute/finite.hpp"
#include "compute/moe/moe_layer.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/parameter_part.hpp"

namespace darcy::actors {

namespace {

using compute::nn::matrix;
using const_rows = Eigen::Map<const matrix>;
using rows_map = Eigen::Map<matrix>;

/// The rows of `block` as a matrix view, or errc::dimension_mismatch when its values are not
/// rows × dim.
caf::expected<const_rows> view(const row_block& block, uint32_t dim) {
  if (block.values.size() != static_cast<size_t>(block.rows) * dim)
    return make_error(errc::dimension_mismatch, std::to_string(block.values.size()) +
                                                  " values are not " + std::to_string(block.rows) +
                                                  " rows of " + std::to_string(dim));
  return const_rows{block.values.values().data(), block.rows, dim};
}

caf::error not_started() {
  return make_error(errc::unavailable, "the expert did not start");
}

caf::result<row_block> forward(expert_pointer self, const row_block& block) {
  auto& st = self->state;
  if (!st.expert)
    return not_started();
  // A copy of a forward whose backward was applied: the router no longer waits for it, and
  // taking it would lose the forward the next backward needs.
  if (st.last_backward && block.step <= st.last_backward->step)
    return make_error(errc::invalid_argument,
                      "expert " + std::to_string(st.config.index) + ": a late forward of step " +
                        std::to_string(block.step) + ", whose backward was applied");
  auto dim = st.config.layer.dim;
  auto in = view(block, dim);
  if (!in)
    return std::move(in.error());
  if (!(st.step && *st.step == block.step))
    st.examples += block.rows;
  st.in = *in;
  st.hidden.resize(block.rows, st.expert->hidden_width());
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(block.rows) * dim);
  rows_map out{span.data(), block.rows, dim};
  st.expert->forward(st.in, st.hidden, out);
  st.step = block.step;
  return row_block{block.step, block.rows, std::move(values)};
}

caf::result<row_block> backward(expert_pointer self, const row_block& block) {
  auto& st = self->state;
  if (!st.expert)
    return not_started();
  // A repeated request (the router asked again, the first answer being late or lost): the
  // update was applied once, and its answer is given again.
  if (st.last_backward && st.last_backward->step == block.step &&
      st.last_backward->rows == block.rows)
    return *st.last_backward;
  auto dim = st.config.layer.dim;
  if (!st.step || *st.step != block.step || st.in.rows() != block.rows)
    return make_error(errc::invalid_argument, "expert " + std::to_string(st.config.index) +
                                                ": backward of step " + std::to_string(block.step) +
                                                " without its forward");
  auto dout = view(block, dim);
  if (!dout)
    return std::move(dout.error());
  if (!compute::all_finite(*dout))
    return make_error(errc::non_finite, "expert " + std::to_string(st.config.index) +
                                          ": a gradient is NaN or infinite; nothing applied");
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(block.rows) * dim);
  rows_map din{span.data(), block.rows, dim};
  st.expert->backward(st.in, st.hidden, *dout, din);
  st.optimizer->step(st.expert->parameters());
  st.step.reset();
  st.last_backward = row_block{block.step, block.rows, std::move(values)};
  return *st.last_backward;
}

caf::result<file_info> save(expert_pointer self, const std::string& root, const std::string& name) {
  auto& st = self->state;
  if (!st.expert)
    return not_started();
  if (st.saved_name == name)
    return st.saved_part;
  auto part = stores::write_parameter_part(stores::checkpoint_dir{root}, name + ".params",
                                           st.expert->parameters(), *st.optimizer);
  if (!part)
    return std::move(part.error());
  st.saved_name = name;
  st.saved_part = *part;
  return *part;
}

caf::result<ok_atom> load(expert_pointer self, const std::string& root, const file_info& part) {
  auto& st = self->state;
  if (!st.expert)
    return not_started();
  if (auto err = stores::read_parameter_part(stores::checkpoint_dir{root}, part,
                                             st.expert->parameters(), *st.optimizer))
    return err;
  // The steps after the checkpoint are trained again: none of them counts as applied.
  st.step.reset();
  st.last_backward.reset();
  return ok_atom::value;
}

} // namespace

expert_actor::behavior_type moe_expert(expert_pointer self, expert_config config) {
  auto& st = self->state;
  auto adam = compute::adam_optimizer(static_cast<float>(config.learning_rate));
  auto err = compute::moe::validate(config.layer);
  if (!err)
    err = compute::validate(adam);
  if (!err && config.index >= config.layer.gating.experts)
    err = plain_error{errc::invalid_config, "expert index beyond the layer's experts"};
  st.config = config;
  if (err) {
    self->quit(make_error(err));
  } else {
    st.expert.emplace(config.layer, config.index);
    st.optimizer.emplace(adam);
  }
  return {
    [self](forward_atom, const row_block& block) { return forward(self, block); },
    [self](backward_atom, const row_block& block) { return backward(self, block); },
    [self](save_atom, const std::string& root, const std::string& name) {
      return save(self, root, name);
    },
    [self](load_atom, const std::string& root, const file_info& part) {
      return load(self, root, part);
    },
  };
}

} // namespace darcy::actors
