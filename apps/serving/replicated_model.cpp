#include "apps/serving/replicated_model.hpp"

#include <algorithm>
#include <future>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "runtime/log.hpp"

namespace darcy::serving {

namespace {

using steady = std::chrono::steady_clock;
using ops::estimator::exported_model;

/// Whether a request failed because a shard could not be reached in time, rather than on its
/// input, its files or its link (which another copy, or a reload, would not mend).
bool lost_shard(const caf::error& err) {
  for (auto code :
       {errc::invalid_argument, errc::corrupt_file, errc::not_found, errc::dimension_mismatch,
        errc::invalid_config, errc::io_error, errc::batch_too_large, errc::empty_batch})
    if (is(err, code))
      return false;
  return true;
}

} // namespace

caf::expected<std::unique_ptr<replicated_model>> replicated_model::load(
  const std::string& dir, const ops::estimator::embedding_placement& where, replica_options r) {
  std::unique_ptr<replicated_model> m{new replicated_model};
  m->dir_ = dir;
  m->where_ = where;
  m->options_ = r;
  std::vector<std::vector<std::string>> members{where.nodes};
  if (r.replicas != 1) {
    if (!where.cluster)
      return make_error(errc::invalid_config,
                        "replicas of a model's embeddings need them on a cluster's shards");
    auto s = ops::session::open({.seed = where.cluster, .name = "serve-replicas", .threads = 1});
    if (!s)
      return std::move(s.error());
    m->cluster_ = std::move(*s);
    auto up = m->members_up();
    if (!up)
      return std::move(up.error());
    auto assigned = assign_replicas(*up, r.replicas);
    if (!assigned)
      return std::move(assigned.error());
    members = std::move(*assigned);
  }
  for (auto& on : members) {
    auto placed = where;
    placed.nodes = on;
    auto model = exported_model::load(dir, "", placed);
    if (!model)
      return std::move(model.error());
    if (!m->copies_.empty() && (*model)->version() != m->copies_.front().model->version())
      return make_error(errc::unavailable, dir +
                                             ": a new version was exported while its "
                                             "replicas loaded; start again");
    m->copies_.push_back({std::move(*model), on});
  }
  return m;
}

caf::expected<std::vector<std::string>> replicated_model::members_up() {
  auto status = cluster_->status();
  if (!status)
    return std::move(status.error());
  std::vector<std::string> up;
  for (auto& member : status->members)
    if (member.state == member_state::up)
      up.push_back(member.name);
  return up;
}

void replicated_model::take_out(size_t i, const std::shared_ptr<exported_model>& model,
                                const caf::error& why) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (copies_[i].model != model || !copies_[i].serving)
    return;
  copies_[i].serving = false;
  if (copies_.size() > 1)
    runtime::log_warn("serving: replica {} of {} out of service until it is brought back: {}", i,
                      dir_, render(why));
}

caf::expected<replicated_model::prediction> replicated_model::predict(
  const ops::estimator::batch& b, std::optional<steady::time_point> deadline, bool allow_partial) {
  std::vector<std::pair<size_t, std::shared_ptr<exported_model>>> order;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    std::vector<bool> serving;
    for (auto& c : copies_)
      serving.push_back(c.serving);
    for (auto i : attempt_order(serving, next_++ % copies_.size()))
      order.emplace_back(i, copies_[i].model);
  }
  caf::error failure;
  for (size_t k = 0; k < order.size(); ++k) {
    auto& [i, model] = order[k];
    if (!deadline || !model->sharded_embeddings()) {
      auto spec = model->predict_spec(b);
      if (!spec)
        return std::move(spec.error());
      return prediction{std::move(*spec), false};
    }
    bool last = k + 1 == order.size();
    auto now = steady::now();
    if (k > 0 && now >= *deadline)
      break;
    auto until =
      last ? *deadline : std::min(*deadline, now + std::chrono::milliseconds{options_.attempt_ms});
    ops::lookup_deadline_scope scope{until, last && allow_partial};
    auto spec = model->predict_spec(b);
    if (spec)
      return prediction{std::move(*spec), scope.missing_shards() > 0};
    if (!lost_shard(spec.error()))
      return std::move(spec.error());
    take_out(i, model, spec.error());
    failure = std::move(spec.error());
  }
  return failure;
}

caf::expected<exported_model::followed> replicated_model::follow_copy(
  size_t i, copy& c, const std::string& dir, const std::vector<std::string>& up) {
  auto many = options_.replicas != 1;
  if (!many || all_up(c.members, up)) {
    // A copy that serves alone restores a whole chain (a training run started again) with a
    // load's patience: cut short at the shards' timeout, a slow restore would count as a lost
    // shard, and the chain would be restored again onto a fresh copy on the same busy nodes
    // while every push waits.
    auto f = many ? c.model->follow(dir) : c.model->follow(dir, where_.restore_timeout);
    if (f || !c.model->sharded_embeddings() || !lost_shard(f.error()))
      return f;
    runtime::log_warn("serving: replica {} of {} lost a shard: {}; loading it again", i, dir_,
                      render(f.error()));
  }
  // The export onto live members, then the whole chain; out of service meanwhile.
  take_out(i, c.model, make_error(errc::unavailable, "a member of it is down"));
  auto where = many ? placement_for(i, up) : where_;
  if (!where)
    return std::move(where.error());
  if (many) {
    c.reloading = true;
    c.serving = false;
    beside(i, [this, i, dir, version = c.model->version(), to = *where] {
      reload(i, dir, version, to);
    });
    return make_error(errc::unavailable, "replica " + std::to_string(i) + " is loaded again");
  }
  auto fresh = exported_model::load(dir_, c.model->version(), *where);
  if (!fresh)
    return std::move(fresh.error());
  std::shared_ptr<exported_model> model = std::move(*fresh);
  // A whole chain onto fresh shards, as reload() restores it: under the sync's own patience, a
  // machine too busy to restore within it would load and retire a copy at every sync, each
  // restore cut short leaving its work queued on the shards, and never serve a newer sync.
  auto f = model->follow(dir, where_.restore_timeout);
  if (!f) {
    retirer_.retire(std::move(model));
    return f;
  }
  c.model = std::move(model);
  c.members = where->nodes;
  ++c.reloads;
  return f;
}

caf::expected<ops::estimator::embedding_placement> replicated_model::placement_for(
  size_t i, const std::vector<std::string>& up) {
  std::vector<std::vector<std::string>> in_service;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    for (size_t j = 0; j < copies_.size(); ++j)
      if (j != i && copies_[j].serving && all_up(copies_[j].members, up))
        in_service.push_back(copies_[j].members);
  }
  auto where = where_;
  where.nodes = reload_members(up, in_service);
  if (where.nodes.empty())
    return make_error(errc::unavailable,
                      "replica " + std::to_string(i) + ": every member up holds another replica");
  return where;
}

void replicated_model::recover(size_t i, std::string dir) {
  std::shared_ptr<exported_model> model;
  std::vector<std::string> members;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    model = copies_[i].model;
    members = copies_[i].members;
  }
  auto up = members_up();
  if (up && all_up(members, *up)) {
    auto f = model->follow(dir, where_.restore_timeout);
    if (f || !lost_shard(f.error()))
      return serve_again(i, model, members, false, dir, std::move(f));
  }
  auto where = up ? placement_for(i, *up)
                  : caf::expected<ops::estimator::embedding_placement>{std::move(up.error())};
  if (!where)
    return serve_again(i, model, members, false, dir, std::move(where.error()));
  reload(i, std::move(dir), model->version(), std::move(*where));
}

void replicated_model::reload(size_t i, std::string dir, std::string version,
                              ops::estimator::embedding_placement where) {
  auto fresh = exported_model::load(dir_, version, where);
  if (!fresh) {
    // Under follow_mutex_, as serve_again: a copy's entry changes between syncs, never while
    // follow() works on its snapshot of the copies.
    std::lock_guard<std::mutex> one_sync{follow_mutex_};
    std::lock_guard<std::mutex> guard{mutex_};
    copies_[i].reloading = false;
    runtime::log_warn(
      "serving: replica {} of {} stays out of service: loading it on {} "
      "member(s) failed: {}",
      i, dir_, where.nodes.size(), render(fresh.error()));
    return;
  }
  std::shared_ptr<exported_model> model = std::move(*fresh);
  auto f = model->follow(dir, where_.restore_timeout);
  serve_again(i, model, where.nodes, true, dir, std::move(f));
}

void replicated_model::serve_again(size_t i, std::shared_ptr<exported_model> model,
                                   std::vector<std::string> members, bool reloaded,
                                   const std::string& dir,
                                   caf::expected<exported_model::followed> f) {
  // The syncs that came meanwhile, then the last ones with no sync in between.
  for (size_t more = 0; f && f->applied > 0 && more < 8; ++more)
    f = model->follow(dir, where_.restore_timeout);
  std::lock_guard<std::mutex> one_sync{follow_mutex_};
  if (f)
    f = model->follow(dir);
  std::shared_ptr<exported_model> replaced;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    auto& c = copies_[i];
    c.reloading = false;
    if (!f) {
      runtime::log_warn(
        "serving: replica {} of {} on {} member(s) stays out of service: its "
        "follow of the syncs failed: {}",
        i, dir_, members.size(), render(f.error()));
      return;
    }
    replaced = std::exchange(c.model, std::move(model));
    c.members = std::move(members);
    c.serving = true;
    c.reloads += reloaded ? 1 : 0;
    runtime::log_info("serving: replica {} of {} is in service again on {} member(s)", i, dir_,
                      c.members.size());
  }
  retirer_.retire(std::move(replaced));
}

void replicated_model::beside(size_t i, std::function<void()> work) {
  if (reloads_.size() <= i)
    reloads_.resize(copies_.size());
  if (reloads_[i].joinable()) // done: copy i was not reloading
    reloads_[i].join();
  reloads_[i] = std::thread{std::move(work)};
}

replicated_model::~replicated_model() {
  for (auto& t : reloads_)
    if (t.joinable())
      t.join();
}

caf::expected<replicated_model::synced> replicated_model::follow(const std::string& dir) {
  std::lock_guard<std::mutex> one_sync{follow_mutex_};
  std::vector<copy> copies;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    copies = copies_;
  }
  std::vector<std::string> up;
  if (options_.replicas != 1) {
    auto members = members_up();
    if (!members)
      return std::move(members.error());
    up = std::move(*members);
  }
  synced out;
  bool reached = false;
  caf::error first;
  auto took = [&](size_t i, caf::expected<exported_model::followed>& f, uint64_t reloads) {
    copies[i].serving = static_cast<bool>(f);
    if (f) {
      out.followed = *f;
      reached = true;
      ++out.serving;
      out.reloaded += copies[i].reloads - reloads;
    } else if (!copies[i].reloading) {
      if (options_.replicas != 1)
        runtime::log_warn("serving: replica {} of {} stays out of service: {}", i, dir_,
                          render(f.error()));
      if (!first)
        first = std::move(f.error());
    }
    // In service at once: predictions use it from now on.
    std::shared_ptr<exported_model> replaced;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      replaced = std::exchange(copies_[i], copies[i]).model;
    }
    retirer_.retire(std::move(replaced));
  };
  if (options_.replicas == 1) {
    for (size_t i = 0; i < copies.size(); ++i) {
      auto reloads = copies[i].reloads;
      auto f = follow_copy(i, copies[i], dir, up);
      took(i, f, reloads);
    }
  } else {
    follow_copies(copies, dir, up, took);
  }
  if (!reached)
    return first ? std::move(first)
                 : make_error(errc::unavailable,
                              "serving: every replica of " + dir_ + " is being loaded again");
  return out;
}

void replicated_model::follow_copies(
  std::vector<copy>& copies, const std::string& dir, const std::vector<std::string>& up,
  const std::function<void(size_t, caf::expected<exported_model::followed>&, uint64_t)>& took) {
  // The copies in service follow one after the other, so that the others serve at full speed
  // meanwhile, each on a thread of its own for at most four attempt times: one still at it
  // then (a shard lost and not yet seen down, or a node too busy) goes on beside the syncs,
  // out of service until it has caught up.
  auto bound = std::chrono::milliseconds{4 * options_.attempt_ms};
  for (size_t i = 0; i < copies.size(); ++i) {
    auto& c = copies[i];
    if (c.reloading)
      continue;
    if (!c.serving || !all_up(c.members, up)) {
      // Out of service or a member down: nobody waits for it.
      if (c.serving) {
        auto f = follow_copy(i, c, dir, up);
        took(i, f, c.reloads);
        continue;
      }
      c.reloading = true;
      beside(i, [this, i, dir] { recover(i, dir); });
      std::lock_guard<std::mutex> guard{mutex_};
      copies_[i] = c;
      continue;
    }
    auto pending =
      std::async(std::launch::async, [model = c.model, dir] { return model->follow(dir); });
    if (pending.wait_for(bound) != std::future_status::ready) {
      c.reloading = true;
      c.serving = false;
      beside(i, [this, i, model = c.model, members = c.members, dir,
                 f = std::make_shared<decltype(pending)>(std::move(pending))]() {
        auto followed = f->get();
        if (followed || !lost_shard(followed.error()))
          return serve_again(i, model, members, false, dir, std::move(followed));
        recover(i, dir);
      });
      std::lock_guard<std::mutex> guard{mutex_};
      copies_[i] = c;
      continue;
    }
    auto f = pending.get();
    if (!f && lost_shard(f.error())) {
      runtime::log_warn("serving: replica {} of {} lost a shard: {}; loading it again", i, dir_,
                        render(f.error()));
      take_out(i, c.model, f.error());
      c.reloading = true;
      c.serving = false;
      beside(i, [this, i, dir] { recover(i, dir); });
      f = make_error(errc::unavailable, "replica " + std::to_string(i) + " is loaded again");
    }
    took(i, f, c.reloads);
  }
}

bool replicated_model::out_of_service() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return std::any_of(copies_.begin(), copies_.end(),
                     [](const copy& c) { return !c.serving && !c.reloading; });
}

bool replicated_model::sharded_embeddings() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return copies_.front().model->sharded_embeddings();
}

std::string replicated_model::version() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return copies_.front().model->version();
}

std::vector<de_config> replicated_model::embedding_tables() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return copies_.front().model->embedding_tables();
}

nlohmann::json replicated_model::describe() const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto out = nlohmann::json::array();
  for (auto& c : copies_)
    out.push_back({{"members", c.members}, {"serving", c.serving}, {"reloads", c.reloads}});
  return out;
}

} // namespace darcy::serving
