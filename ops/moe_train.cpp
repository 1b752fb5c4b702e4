#include "ops/moe_train.hpp"

#include <charconv>
#include <cmath>
#include <set>

#include "actors/moe/expert_actor.hpp"
#include "actors/moe/moe_router.hpp"
#include "compute/moe/moe_layer.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/error.hpp"
#include "ops/supervised_group.hpp"

namespace darcy::ops {

namespace {

using compute::nn::matrix;

constexpr const char* expert_kind_name = "expert";

row_block to_block(uint64_t step, const matrix& m) {
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(m.size()));
  Eigen::Map<matrix>{span.data(), m.rows(), m.cols()} = m;
  return row_block{step, static_cast<uint32_t>(m.rows()), std::move(values)};
}

plain_error validate(const moe_train_options& o) {
  if (auto err = compute::moe::validate(o.layer))
    return err;
  if (auto err = compute::validate(compute::adam_optimizer(static_cast<float>(o.learning_rate))))
    return err;
  auto bad = [](const std::string& what) { return plain_error{errc::invalid_config, what}; };
  if (o.replicas == 0 || o.batch == 0 || o.steps == 0)
    return bad("moe train: replicas, batch and steps must be at least 1");
  if (o.checkpoint_dir.empty())
    return bad("moe train: a checkpoint directory is required (the run restores from it)");
  if (o.checkpoint_every == 0 || o.keep == 0)
    return bad("moe train: checkpoint_every and keep must be at least 1");
  return {};
}

/// The run's state in this process: the experts' current handles, and the router over them.
class moe_run {
public:
  moe_run(session& s, const moe_train_options& o, supervised_group group)
    : s_(s), o_(o), self_(s.system()), group_(std::move(group)), experts_(group_.actors) {
    self_->send(group_.supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self_));
    for (auto& e : experts_)
      self_->monitor(e);
    std::mt19937_64 rng{o.seed};
    teacher_ = compute::nn::normal<float>(o.layer.dim, o.layer.dim,
                                          1.0f / std::sqrt(static_cast<float>(o.layer.dim)), rng);
  }

  ~moe_run() {
    self_->send_exit(router_, caf::exit_reason::user_shutdown);
    self_->send_exit(group_.supervisor, caf::exit_reason::user_shutdown);
  }

  caf::expected<moe_train_result> run() {
    router_ = spawn_router();
    // A checkpoint already in the directory resumes the run; otherwise step 0 is saved, so
    // that there is always one to restore.
    auto resumed = load();
    if (!resumed && !is(resumed.error(), errc::not_found))
      return std::move(resumed.error());
    if (!resumed) {
      if (auto err = save(0))
        return err;
    } else if (auto err = resume_at(*resumed)) {
      return err;
    }
    while (step_ < o_.steps) {
      auto err = run_step();
      if (!err && (step_ % o_.checkpoint_every == 0 || step_ == o_.steps))
        err = save(step_);
      if (err)
        if (auto fatal = recover(err))
          return fatal;
    }
    return finish();
  }

private:
  moe_router_actor spawn_router() {
    std::vector<expert_actor> handles;
    for (auto& e : experts_)
      handles.push_back(caf::actor_cast<expert_actor>(e));
    moe_router_config cfg{o_.layer, o_.replicas, o_.learning_rate};
    // In one process no message is lost: asking again would only repeat a slow expert's work.
    if (!s_.in_process()) {
      cfg.expert_attempts = o_.expert_attempts;
      cfg.expert_attempt_ms = static_cast<int64_t>(o_.expert_retry.count());
    }
    return s_.system().spawn(actors::moe_router, cfg, handles);
  }

  std::chrono::milliseconds step_timeout() const { return s_.timeout() * 4; }

  caf::expected<checkpoint_manifest> load() {
    caf::expected<checkpoint_manifest> result = caf::error{};
    self_->request(router_, step_timeout(), load_atom::value, o_.checkpoint_dir)
      .receive([&](checkpoint_manifest& m) { result = std::move(m); },
               [&](caf::error& e) { result = std::move(e); });
    return result;
  }

  caf::error save(uint64_t step) {
    caf::error result;
    self_
      ->request(
        router_, step_timeout(), save_atom::value,
        moe_save_request{o_.checkpoint_dir, static_cast<int64_t>(step), o_.keep, encode_losses()})
      .receive([](checkpoint_manifest&) {}, [&](caf::error& e) { result = std::move(e); });
    return result;
  }

  /// The losses so far, saved with each checkpoint as its extra state.
  std::string encode_losses() const {
    std::string out;
    char buf[32];
    for (auto l : losses_) {
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, l);
      out.append(buf, end);
      out += ' ';
    }
    return out;
  }

  caf::error resume_at(const checkpoint_manifest& m) {
    std::vector<double> losses;
    const char* at = m.extra.data();
    const char* end = at + m.extra.size();
    while (at < end) {
      double l = 0;
      auto [next, ec] = std::from_chars(at, end, l);
      if (ec != std::errc{})
        return make_error(errc::corrupt_file, o_.checkpoint_dir + ": checkpoint " + m.checkpoint +
                                                " holds no loss history");
      losses.push_back(l);
      at = next + 1;
    }
    if (m.step < 0 || losses.size() != static_cast<size_t>(m.step))
      return make_error(errc::corrupt_file, o_.checkpoint_dir + ": checkpoint " + m.checkpoint +
                                              " holds " + std::to_string(losses.size()) +
                                              " losses for step " + std::to_string(m.step));
    step_ = static_cast<uint64_t>(m.step);
    losses_ = std::move(losses);
    return {};
  }

  /// One step over every replica's batch; appends its loss.
  caf::error run_step() {
    std::vector<matrix> x, target;
    for (uint32_t r = 0; r < o_.replicas; ++r) {
      std::mt19937_64 rng{o_.seed * 1000003 + step_ * o_.replicas + r};
      x.push_back(compute::nn::normal<float>(o_.batch, o_.layer.dim, 1.0f, rng));
      target.push_back((x.back() * teacher_).array().tanh().matrix());
    }
    // The step's own sender: self_ lives through the run, and would collect the timeout
    // message of each answered request, which a blocking actor never drops.
    caf::scoped_actor self{s_.system()};
    auto y = moe_phase(self, router_, true, step_, x, step_timeout());
    if (!y)
      return std::move(y.error());
    auto rows = static_cast<double>(o_.replicas) * o_.batch;
    double loss = 0;
    std::vector<matrix> dy;
    for (uint32_t r = 0; r < o_.replicas; ++r) {
      matrix diff = (*y)[r] - target[r];
      loss += 0.5 * diff.squaredNorm() / rows;
      dy.push_back(diff / static_cast<float>(rows));
    }
    if (auto dx = moe_phase(self, router_, false, step_, dy, step_timeout()); !dx)
      return std::move(dx.error());
    losses_.push_back(loss);
    if (o_.on_step)
      o_.on_step(step_, loss);
    ++step_;
    return {};
  }

  /// Handles one supervisor event or down message: a restarted expert replaces its handle.
  caf::error observe(caf::down_msg& down) {
    dead_.insert(down.source);
    return {};
  }

  caf::error observe(supervisor_event& e) {
    if (e.kind == supervisor_event_kind::gave_up)
      return make_error(errc::spawn_failed, "moe experts: the supervisor gave up: " + e.reason);
    if (e.kind != supervisor_event_kind::child_restarted &&
        e.kind != supervisor_event_kind::child_started)
      return {};
    size_t index = 0;
    auto digits = e.child.substr(std::string{expert_kind_name}.size() + 1);
    std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (index < experts_.size() && e.actor) {
      experts_[index] = e.actor;
      self_->monitor(e.actor);
    }
    return {};
  }

  bool all_alive() const {
    for (auto& e : experts_)
      if (dead_.count(e.address()))
        return false;
    return true;
  }

  /// After a failed step or save: waits until every expert runs (the supervisor restarts
  /// the lost ones), then restores a new router over them from the last checkpoint.
  caf::error recover(const caf::error& cause) {
    if (++restores_ > o_.max_restores)
      return make_error(errc::restart_intensity_exceeded,
                        "moe train: " + std::to_string(o_.max_restores) +
                          " restores, and the run still fails: " + render(cause));
    self_->send_exit(router_, caf::exit_reason::user_shutdown);
    caf::error failure;
    bool timed_out = false;
    auto handle = [&](auto& msg) {
      if (auto err = observe(msg))
        failure = err;
    };
    // What already arrived first, then wait for restarts.
    bool pending = true;
    while (pending && !failure)
      self_->receive([&](caf::down_msg& m) { handle(m); }, [&](supervisor_event& e) { handle(e); },
                     caf::after(std::chrono::seconds(0)) >> [&] { pending = false; });
    while (!all_alive() && !failure && !timed_out)
      self_->receive([&](caf::down_msg& m) { handle(m); }, [&](supervisor_event& e) { handle(e); },
                     caf::after(s_.timeout() * 8) >> [&] { timed_out = true; });
    if (failure)
      return failure;
    if (timed_out)
      return make_error(errc::timeout,
                        "moe train: lost experts were not restarted: " + render(cause));
    router_ = spawn_router();
    auto manifest = load();
    if (!manifest)
      return recover(manifest.error());
    if (auto err = resume_at(*manifest))
      return err;
    if (o_.on_restore)
      o_.on_restore(manifest->step, render(cause));
    return {};
  }

  caf::expected<moe_train_result> finish() {
    moe_train_result result;
    result.losses = losses_;
    result.restores = restores_;
    self_->request(router_, s_.timeout(), status_atom::value)
      .receive([&](moe_router_status& st) { result.expert_batch = st.expert_batch; },
               [](caf::error&) {});
    result.expert_nodes.resize(experts_.size());
    self_->request(group_.supervisor, s_.timeout(), children_atom::value)
      .receive(
        [&](std::vector<child_info>& children) {
          for (size_t e = 0; e < experts_.size(); ++e)
            for (auto& c : children)
              if (c.id == group_child_id(expert_kind_name, e))
                result.expert_nodes[e] = c.node;
        },
        [](caf::error&) {});
    return result;
  }

  session& s_;
  const moe_train_options& o_;
  caf::scoped_actor self_;
  supervised_group group_;
  std::vector<caf::actor> experts_;
  std::set<caf::actor_addr> dead_;
  moe_router_actor router_;
  matrix teacher_;
  uint64_t step_ = 0;
  std::vector<double> losses_;
  uint32_t restores_ = 0;
};

} // namespace

caf::expected<std::vector<matrix>> moe_phase(caf::scoped_actor& self,
                                             const moe_router_actor& router, bool forward,
                                             uint64_t step, const std::vector<matrix>& blocks,
                                             std::chrono::milliseconds timeout) {
  using handle =
    decltype(self->request(router, timeout, forward_atom::value, uint32_t{0}, row_block{}));
  std::vector<handle> handles;
  for (uint32_t r = 0; r < blocks.size(); ++r) {
    auto b = to_block(step, blocks[r]);
    if (forward)
      handles.push_back(self->request(router, timeout, forward_atom::value, r, std::move(b)));
    else
      handles.push_back(self->request(router, timeout, backward_atom::value, r, std::move(b)));
  }
  std::vector<matrix> out(blocks.size());
  caf::error failure;
  for (size_t r = 0; r < blocks.size(); ++r)
    handles[r].receive(
      [&](row_block& x) {
        out[r] = Eigen::Map<const matrix>{x.values.values().data(), x.rows, blocks[r].cols()};
      },
      [&](caf::error& e) {
        if (!failure)
          failure = std::move(e);
      });
  if (failure)
    return failure;
  return out;
}

caf::expected<moe_train_result> train_moe(session& s, const moe_train_options& o) {
  if (auto err = validate(o))
    return make_error(err);
  auto status = s.status();
  if (!status)
    return std::move(status.error());
  auto targets = runtime::live_targets(*status, o.expert_nodes);
  if (!targets)
    return std::move(targets.error());
  group_spec spec{
    o.prefix, expert_kind_name, actors::expert_state::name, o.layer.gating.experts, [&](size_t e) {
      return caf::make_message(expert_config{o.layer, static_cast<uint32_t>(e), o.learning_rate});
    }};
  auto group = start_supervised_group(s, *targets, spec);
  if (!group)
    return std::move(group.error());
  moe_run run{s, o, std::move(*group)};
  return run.run();
}

} // namespace darcy::ops
