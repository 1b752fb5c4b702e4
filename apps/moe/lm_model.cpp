#include "apps/moe/lm_model.hpp"

#include <cmath>

#include "compute/finite.hpp"
#include "compute/nn/gemm.hpp"
#include "compute/optimizer.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"

namespace darcy::moe {

namespace {

using compute::nn::matrix;
using sequence = std::vector<matrix>;

/// Rows t·batch .. (t+1)·batch − 1 of `m` as step t.
sequence split(const matrix& m, Eigen::Index batch) {
  sequence xs;
  for (Eigen::Index t = 0; t < m.rows() / batch; ++t)
    xs.push_back(m.middleRows(t * batch, batch));
  return xs;
}

matrix stack(const sequence& xs) {
  matrix m(static_cast<Eigen::Index>(xs.size()) * xs[0].rows(), xs[0].cols());
  for (size_t t = 0; t < xs.size(); ++t)
    m.middleRows(static_cast<Eigen::Index>(t) * xs[0].rows(), xs[0].rows()) = xs[t];
  return m;
}

uint64_t count(const compute::nn::parameter_list<float>& ps) {
  uint64_t n = 0;
  for (auto* p : ps)
    n += static_cast<uint64_t>(p->value.size());
  return n;
}

/// Multiply-adds per example of one expert.
double expert_cost(const moe_config& c) {
  return c.expert == expert_kind::linear ? double(c.dim) * c.dim : 2.0 * c.dim * c.hidden;
}

} // namespace

lm_model::lm_model(ops::session& s, const lm_options& o, const lm_corpus& corpus)
  : session_(s), o_(o), corpus_(corpus), rng_(o.seed) {
}

caf::error validate(const lm_options& o) {
  auto bad = [](const std::string& what) {
    return make_error(errc::invalid_config, "moe lm: " + what);
  };
  if (o.dim == 0 || o.batch == 0 || o.unroll == 0 || o.sampled == 0 || o.epochs == 0)
    return bad("dim, batch, unroll, sampled and epochs must be at least 1");
  // The dense layers' Adam, and the service's Adam on the embedding rows.
  if (auto err = compute::validate(compute::adam_optimizer(static_cast<float>(o.learning_rate))))
    return bad("learning rate: " + err.context);
  optimizer_config rows;
  rows.kind = optimizer_kind::adam;
  rows.learning_rate = o.embedding_learning_rate;
  if (auto err = compute::validate(rows))
    return bad("embedding learning rate: " + err.context);
  if (!(o.dropout >= 0 && o.dropout < 1))
    return bad("dropout must be in [0, 1)");
  if (o.gpu && o.middle == lm_middle::lstm)
    return bad("the dense baseline has no GPU path; --gpu trains a MoE middle layer");
  auto layer = o.layer;
  layer.dim = o.dim;
  if (o.middle == lm_middle::moe)
    if (auto err = compute::moe::validate(layer))
      return make_error(err);
  if (o.middle == lm_middle::hierarchical)
    if (auto err = compute::moe::validate(o.primary, layer))
      return make_error(err);
  return {};
}

caf::expected<std::unique_ptr<lm_model>> lm_model::make(ops::session& s, const lm_options& o,
                                                        const lm_corpus& corpus) {
  if (auto err = validate(o))
    return err;
  std::unique_ptr<lm_model> m{new lm_model(s, o, corpus)};
  m->o_.layer.dim = o.dim;
  std::mt19937_64 init{o.seed};
  m->first_.emplace(o.dim, o.dim, init);
  m->second_.emplace(o.dim, o.dim, init);
  if (o.middle == lm_middle::lstm) {
    m->middle_lstm_.emplace(o.dim, o.dim, init);
  } else if (o.middle == lm_middle::moe) {
    auto layer = compute::moe::moe_layer<float>::make(m->o_.layer);
    if (!layer)
      return make_error(layer.error());
    m->moe_ = std::move(*layer);
    m->moe_->set_threads(o.threads);
    if (o.gpu)
      if (auto err = m->moe_->use_gpu())
        return make_error(err);
  } else {
    auto tree = compute::moe::hierarchical_moe<float>::make(o.primary, m->o_.layer);
    if (!tree)
      return make_error(tree.error());
    m->hierarchy_ = std::move(*tree);
    m->hierarchy_->set_threads(o.threads);
    if (o.gpu)
      if (auto err = m->hierarchy_->use_gpu())
        return make_error(err);
  }
  m->optimizer_.emplace(compute::adam_optimizer(static_cast<float>(o.learning_rate)));
  auto dist = compute::candidate_distribution::make(sampler_kind::unigram, corpus.counts, 0.75);
  if (!dist)
    return make_error(dist.error());
  m->sampler_.emplace(std::move(*dist));
  for (auto* c : {&m->input_config_, &m->output_config_}) {
    c->init = {.kind = init_kind::uniform, .low = -0.1f, .high = 0.1f, .seed = o.seed};
    c->optimizer.kind = optimizer_kind::adam;
    c->optimizer.learning_rate = o.embedding_learning_rate;
  }
  m->input_config_.dim = o.dim;
  m->output_config_.dim = o.dim + 1;
  if (o.dropout > 0)
    for (uint64_t i = 0; i < 3; ++i)
      m->dropouts_.emplace_back(o.dropout, o.seed * 0x9E3779B97F4A7C15ull + i);
  m->parameter_count_ = count(m->dense_parameters());
  return m;
}

compute::nn::parameter_list<float> lm_model::dense_parameters() {
  auto ps = first_->parameters();
  auto add = [&](compute::nn::parameter_list<float> more) {
    ps.insert(ps.end(), more.begin(), more.end());
  };
  add(second_->parameters());
  if (middle_lstm_)
    add(middle_lstm_->parameters());
  if (moe_)
    add(moe_->parameters());
  if (hierarchy_)
    add(hierarchy_->parameters());
  return ps;
}

void lm_model::reset_state() {
  first_state_ = {};
  second_state_ = {};
  middle_state_ = {};
}

matrix lm_model::middle_forward(const matrix& x) {
  if (moe_)
    return moe_->forward(x);
  if (hierarchy_)
    return hierarchy_->forward(x);
  auto hs = middle_lstm_->forward(split(x, o_.batch), middle_state_);
  middle_state_ = middle_lstm_->final_state();
  return stack(hs);
}

matrix lm_model::middle_backward(const matrix& dy) {
  if (moe_)
    return moe_->backward(dy);
  if (hierarchy_)
    return hierarchy_->backward(dy);
  return stack(middle_lstm_->backward(split(dy, o_.batch)));
}

matrix lm_model::drop(size_t which, const matrix& x) {
  return dropouts_.empty() ? x : dropouts_[which].forward(x);
}

matrix lm_model::drop_backward(size_t which, const matrix& dy) {
  return dropouts_.empty() ? dy : dropouts_[which].backward(dy);
}

void lm_model::set_training(bool training) {
  if (moe_)
    moe_->set_training(training);
  if (hierarchy_)
    hierarchy_->set_training(training);
  for (auto& d : dropouts_)
    d.set_training(training);
}

matrix lm_model::forward(const matrix& embedded) {
  h1_ = stack(first_->forward(split(drop(0, embedded), o_.batch), first_state_));
  first_state_ = first_->final_state();
  matrix z = h1_ + drop(1, middle_forward(h1_));
  matrix h3 = stack(second_->forward(split(z, o_.batch), second_state_));
  second_state_ = second_->final_state();
  h3 += z;
  return drop(2, h3);
}

caf::expected<double> lm_model::train_step(const std::vector<std::string>& inputs,
                                           const std::vector<uint64_t>& labels, uint64_t step) {
  auto c = compute::nn::draw_candidates(*sampler_, labels, o_.sampled, rng_,
                                        compute::nn::negative_draw::remove_accidental_hits);
  if (!c)
    return make_error(c.error());
  std::vector<std::string> out_keys;
  out_keys.reserve(c->rows.size());
  for (auto r : c->rows)
    out_keys.push_back(corpus_.vocabulary[r]);
  std::vector<ops::table_lookup> tables(2);
  tables[0] = {&input_config_, o_.name + ".in", inputs, {}};
  tables[1] = {&output_config_, o_.name + ".out", std::move(out_keys), {}};
  auto rows = ops::dynamic_embedding_lookup(session_, std::move(tables));
  if (!rows)
    return std::move(rows.error());
  if (moe_)
    moe_->set_step(step);
  if (hierarchy_)
    hierarchy_->set_step(step);
  for (auto& d : dropouts_)
    d.set_step(step);
  matrix h = forward(rows->rows[0]);
  auto d = static_cast<Eigen::Index>(o_.dim);
  matrix w = rows->rows[1].leftCols(d);
  matrix b = rows->rows[1].col(d).transpose();
  auto loss = softmax_.forward(h, w, b, *c);
  if (!std::isfinite(loss))
    return make_error(errc::non_finite, "moe lm: the loss of step " + std::to_string(step) +
                                          " is not finite; nothing applied");
  auto g = softmax_.backward();
  matrix dh3 = drop_backward(2, g.h);
  matrix dz = dh3 + stack(second_->backward(split(dh3, o_.batch)));
  matrix dh1 = dz + middle_backward(drop_backward(1, dz));
  matrix de = drop_backward(0, stack(first_->backward(split(dh1, o_.batch))));
  auto params = dense_parameters();
  if (!compute::nn::grads_finite(params) || !compute::all_finite(de))
    return make_error(errc::non_finite, "moe lm: a gradient of step " + std::to_string(step) +
                                          " is not finite; nothing applied");
  compute::nn::clip_by_global_norm(params, static_cast<float>(o_.clip_norm));
  optimizer_->step(params);
  matrix gout(w.rows(), d + 1);
  gout.leftCols(d) = g.weights;
  gout.col(d) = g.bias.transpose();
  std::vector<const matrix*> grads{&de, &gout};
  if (auto err = rows->handle.backward(grads, static_cast<int64_t>(step)))
    return err;
  return static_cast<double>(loss);
}

caf::expected<lm_eval> lm_model::evaluate(const lm_stream& stream) {
  lm_eval result;
  auto d = static_cast<Eigen::Index>(o_.dim);
  auto out = ops::dynamic_embedding_lookup(session_, corpus_.vocabulary, output_config_,
                                           o_.name + ".out", false);
  if (!out)
    return std::move(out.error());
  matrix w = out->rows.leftCols(d);
  Eigen::RowVectorXf bias = out->rows.col(d).transpose();
  reset_state();
  set_training(false);
  auto batch = static_cast<size_t>(o_.batch), unroll = static_cast<size_t>(o_.unroll);
  auto per_stream = (stream.words.size() - 1) / batch;
  double nll = 0, agreement = 0;
  size_t windows = 0;
  bool batchwise = o_.middle == lm_middle::moe && o_.layer.gating.mask == mask_kind::batchwise;
  for (size_t at = 0; at + unroll <= per_stream; at += unroll) {
    std::vector<std::string> keys(batch * unroll);
    std::vector<uint64_t> labels(batch * unroll);
    for (size_t t = 0; t < unroll; ++t)
      for (size_t b = 0; b < batch; ++b) {
        auto p = b * per_stream + at + t;
        keys[t * batch + b] = stream.words[p];
        labels[t * batch + b] = stream.ids[p + 1];
      }
    auto in = ops::dynamic_embedding_lookup(session_, keys, input_config_, o_.name + ".in", false);
    if (!in)
      return std::move(in.error());
    matrix h = forward(in->rows);
    matrix logits(h.rows(), w.rows());
    compute::nn::gemm<float>(h, false, w, true, logits, 0.0f);
    logits.rowwise() += bias;
    for (Eigen::Index r = 0; r < logits.rows(); ++r) {
      float top = logits.row(r).maxCoeff();
      double sum = (logits.row(r).array() - top).exp().sum();
      nll -= logits(r, static_cast<Eigen::Index>(labels[r])) - top - std::log(sum);
    }
    result.tokens += labels.size();
    if (moe_) {
      result.expert_load.resize(o_.layer.gating.experts);
      for (uint32_t e = 0; e < o_.layer.gating.experts; ++e)
        result.expert_load[e] += moe_->plan().expert_batch(e);
    }
    if (hierarchy_) {
      auto n = o_.layer.gating.experts;
      result.expert_load.resize(size_t{o_.primary.experts} * n);
      for (uint32_t g = 0; g < o_.primary.experts; ++g)
        if (hierarchy_->plan().expert_batch(g) > 0)
          for (uint32_t e = 0; e < n; ++e)
            result.expert_load[g * n + e] += hierarchy_->group(g).plan().expert_batch(e);
    }
    if (batchwise) {
      // The batchwise mask of this held-out batch against the thresholds' choice.
      moe_->gating().set_training(true);
      moe_->gating().forward(h1_);
      moe_->gating().set_training(false);
      agreement += moe_->gating().threshold_agreement();
    }
    ++windows;
  }
  set_training(true);
  reset_state();
  if (result.tokens == 0)
    return make_error(errc::empty_batch, "moe lm: the stream is shorter than one window");
  result.perplexity = std::exp(nll / static_cast<double>(result.tokens));
  if (batchwise)
    result.threshold_agreement = agreement / static_cast<double>(windows);
  return result;
}

uint64_t lm_model::parameters() const {
  return parameter_count_;
}

double lm_model::multiply_adds_per_word() const {
  double d = o_.dim;
  double lstm = 8 * d * d;
  double middle = lstm;
  auto& g = o_.layer.gating;
  if (o_.middle == lm_middle::moe)
    middle = d * g.experts + g.k * expert_cost(o_.layer);
  else if (o_.middle == lm_middle::hierarchical)
    middle = d * o_.primary.experts + o_.primary.k * (d * g.experts + g.k * expert_cost(o_.layer));
  return 2 * lstm + middle;
}

std::string lm_model::moe_device() const {
  std::vector<const compute::moe::moe_layer<float>*> layers;
  if (moe_)
    layers.push_back(moe_.get());
  if (hierarchy_)
    for (uint32_t g = 0; g < hierarchy_->primary().config().experts; ++g)
      layers.push_back(&hierarchy_->group(g));
  bool gpu = !layers.empty();
  for (auto* l : layers) {
    if (!l->gpu_error().empty())
      return "cpu (the GPU failed: " + l->gpu_error() + ")";
    gpu = gpu && l->on_gpu();
  }
  return gpu ? "gpu" : "cpu";
}

} // namespace darcy::moe
