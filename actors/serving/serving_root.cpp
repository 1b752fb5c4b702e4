#include "actors/serving/serving_root.hpp"

#include <algorithm>
#include <type_traits>

#include <caf/actor_cast.hpp>

#include "actors/serving/root_items.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/exit_cascade.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/cluster/supervisor.hpp"
#include "runtime/log.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::actors {

/// Orchestration events kept for status.
constexpr size_t max_events = 200;

void log_event(serving_root_pointer self, std::string text) {
  auto& events = self->state.events;
  runtime::log_info("serving {}: {}", self->state.config.model, text);
  events.push_back(std::move(text));
  if (events.size() > max_events)
    events.erase(events.begin());
}

namespace {

using pending_topk = serving_root_state::pending_topk;

double seconds_since_start(serving_root_pointer self) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - self->state.started)
    .count();
}

/// "a, b, c".
template <class Container>
std::string comma_list(const Container& xs) {
  std::string text;
  for (auto& x : xs) {
    text += text.empty() ? "" : ", ";
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>)
      text += std::to_string(x);
    else
      text += x;
  }
  return text;
}

// Stops a retired version's shard servers once its last request is answered.
void unload_if_idle(serving_root_pointer self, const std::shared_ptr<served_version>& v) {
  auto& st = self->state;
  if (!v->retired || v->in_flight > 0)
    return;
  self->send_exit(v->supervisor, caf::exit_reason::user_shutdown);
  std::erase(st.retired, v);
  log_event(self, "version " + v->version + " unloaded");
}

void retire(serving_root_pointer self, std::shared_ptr<served_version> v) {
  v->retired = true;
  self->state.retired.push_back(v);
  unload_if_idle(self, v);
}

void fail_load(serving_root_pointer self, const caf::error& err) {
  auto& st = self->state;
  auto v = std::move(st.loading);
  if (!v)
    return;
  st.loading = nullptr;
  st.last_error = "version " + v->version + ": " + render(err);
  log_event(self, "load of version " + v->version + " failed: " + render(err));
  self->send_exit(v->supervisor, caf::exit_reason::user_shutdown);
  if (st.load_promise) {
    st.load_promise->deliver(err);
    st.load_promise.reset();
  }
}

// Every shard answered: the root sub-model loads last, and then the version serves.
void finish_load(serving_root_pointer self) {
  auto& st = self->state;
  auto v = st.loading;
  log_event(self, "all " + std::to_string(v->shards.size()) + " shards of version " + v->version +
                    " loaded; loading the root");
  auto root = root_model::load(st.config.model_dir, v->version);
  if (!root)
    return fail_load(self, root.error());
  v->root = std::make_shared<const root_model>(std::move(*root));
  v->next_item = v->root->config().items;
  st.loading = nullptr;
  st.last_error.clear();
  auto old = std::exchange(st.current, v);
  log_event(self, "root of version " + v->version + " loaded; version " + v->version + " serves");
  if (old)
    retire(self, std::move(old));
  if (st.load_promise) {
    st.load_promise->deliver(v->version);
    st.load_promise.reset();
  }
}

std::shared_ptr<served_version> version_of(serving_root_pointer self,
                                           const std::string& supervisor) {
  auto& st = self->state;
  for (auto& v : {st.loading, st.current})
    if (v && v->supervisor_name == supervisor)
      return v;
  for (auto& v : st.retired)
    if (v->supervisor_name == supervisor)
      return v;
  return nullptr;
}

void on_supervisor_event(serving_root_pointer self, const supervisor_event& e) {
  auto v = version_of(self, e.supervisor);
  if (!v)
    return;
  if (e.kind == supervisor_event_kind::gave_up) {
    if (v == self->state.loading)
      return fail_load(self, make_error(errc::spawn_failed, "shard servers: " + e.reason));
    log_event(self, "the shard servers of version " + v->version + " gave up: " + e.reason);
    return;
  }
  auto dot = e.child.rfind('.');
  auto i = static_cast<size_t>(std::stoul(e.child.substr(dot + 1)));
  if (i >= v->shards.size())
    return;
  auto& health = v->health[i];
  if (e.kind == supervisor_event_kind::child_exited) {
    v->shards[i] = serving_shard_actor{};
    health.up = false;
    log_event(self,
              "shard " + std::to_string(i) + " of version " + v->version + " exited: " + e.reason);
    return;
  }
  auto shard = caf::actor_cast<serving_shard_actor>(e.actor);
  v->shards[i] = shard;
  health.node = e.node;
  health.up = true;
  if (e.kind == supervisor_event_kind::child_restarted) {
    ++health.restarts;
    log_event(
      self, "shard " + std::to_string(i) + " of version " + v->version + " restarted on " + e.node);
    resend_items(self, v, static_cast<uint32_t>(i));
  }
  if (v != self->state.loading || v->ready[i])
    return;
  // A shard server loads its sub-model before it answers; its first answer proves the load.
  runtime::remote_run<shard_status>(
    self, shard, request_context{}, "shard " + std::to_string(i),
    [self, v, i](shard_status& status) {
      if (v != self->state.loading || v->ready[i])
        return;
      v->ready[i] = true;
      log_event(self, "shard " + std::to_string(i) + " of version " + v->version + " loaded on " +
                        v->health[i].node + " (" + std::to_string(status.items) + " items)");
      if (std::all_of(v->ready.begin(), v->ready.end(), [](bool b) { return b; }))
        finish_load(self);
    },
    [](const caf::error&) {
      // The shard exited; its supervisor starts it again, or gives up.
    },
    status_atom::value);
}

void start_load(serving_root_pointer self, const checkpoint_manifest& manifest,
                const stores::export_config& config) {
  auto& st = self->state;
  auto v = std::make_shared<served_version>();
  v->version = manifest.checkpoint;
  v->supervisor_name = "serving." + st.config.model + "." + v->version;
  auto n = config.shards;
  v->shards.resize(n);
  v->ready.assign(n, false);
  v->health.resize(n);
  v->lanes.resize(n);
  v->added_by_shard.resize(n);
  supervisor_spec spec;
  spec.name = v->supervisor_name;
  spec.strategy = restart_strategy::one_for_one;
  spec.intensity = 3 * n + 3;
  spec.period_ms = 60000;
  auto& nodes = st.config.nodes;
  for (uint32_t i = 0; i < n; ++i) {
    v->health[i].shard = i;
    serving_shard_config shard{st.config.model_dir, st.config.model,  v->version,  i,
                               st.config.probes,    st.config.rerank, st.config.ef};
    child_spec child;
    child.id = "shard." + std::to_string(i);
    child.factory = st.config.shard_factory;
    child.args = caf::make_message(shard);
    child.nodes = runtime::preferred_nodes(nodes, i);
    child.service = v->supervisor_name + ".shard." + std::to_string(i);
    spec.children.push_back(std::move(child));
  }
  log_event(self,
            "loading version " + v->version + ": starting " + std::to_string(n) + " shard servers");
  st.loading = v;
  v->supervisor = self->system().spawn(runtime::supervisor, std::move(spec));
  self->monitor(v->supervisor);
  // The shard servers stop with the root.
  runtime::stop_on_exit(*self, [supervisor = v->supervisor] {
    return std::vector<caf::actor>{caf::actor_cast<caf::actor>(supervisor)};
  });
  self->send(v->supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
}

// Starts loading `version` (empty: the newest) unless it serves already; answers the version.
caf::expected<std::string> begin_load(serving_root_pointer self, const std::string& version) {
  auto& st = self->state;
  if (st.loading)
    return make_error(errc::overloaded, "version " + st.loading->version + " of " +
                                          st.config.model + " is still loading");
  if (!version.empty()) {
    // A version the client names must be one of the model's: its errors never name a path.
    if (auto err = stores::check_checkpoint_name(version))
      return err;
    auto versions = stores::export_versions(st.config.model_dir);
    if (std::find(versions.begin(), versions.end(), version) == versions.end())
      return make_error(errc::not_found, "model " + st.config.model + " has no version " + version +
                                           " (versions: " + comma_list(versions) + ")");
  }
  auto manifest = stores::read_export_manifest(st.config.model_dir, version);
  if (!manifest)
    return std::move(manifest.error());
  if (st.current && st.current->version == manifest->checkpoint)
    return st.current->version;
  auto config = stores::read_export_config(st.config.model_dir, *manifest);
  if (!config)
    return std::move(config.error());
  start_load(self, *manifest, *config);
  return manifest->checkpoint;
}

caf::result<std::string> load(serving_root_pointer self, const request_context& ctx,
                              const std::string& version) {
  auto& st = self->state;
  if (auto err = st.access.admit(ctx, access_action::manage, seconds_since_start(self)))
    return err;
  auto started = begin_load(self, version);
  if (!started)
    return std::move(started.error());
  if (!st.loading)
    return *started;
  auto promise = self->make_response_promise<std::string>();
  st.load_promise = promise;
  return promise;
}

void finish_topk(serving_root_pointer self, uint64_t id) {
  auto& st = self->state;
  auto found = st.pending.find(id);
  if (found == st.pending.end())
    return;
  auto p = std::move(found->second);
  st.pending.erase(found);
  std::vector<uint32_t> missing;
  for (uint32_t i = 0; i < p.answered.size(); ++i)
    if (!p.answered[i])
      missing.push_back(i);
  auto& v = *p.version;
  if (!missing.empty() && !p.allow_partial) {
    auto code =
      is(p.first_error, errc::deadline_exceeded) ? errc::deadline_exceeded : errc::unavailable;
    p.promise.deliver(make_error(code, "model " + st.config.model + " version " + v.version +
                                         ": shards " + comma_list(missing) + " missing (" +
                                         render(p.first_error) + ")"));
  } else {
    topk_response r;
    r.version = v.version;
    drop_unconfirmed(v, p.hits);
    for (auto& h : compute::merge_top_k(p.hits, p.k)) {
      r.ids.push_back(h.id);
      r.names.push_back(*served_item_name(v, h.id));
      r.scores.push_back(h.score);
    }
    r.partial = !missing.empty();
    r.missing_shards = std::move(missing);
    st.access.count_rows(p.principal, r.ids.size());
    p.promise.deliver(std::move(r));
  }
  --v.in_flight;
  unload_if_idle(self, p.version);
}

// Counts one answer (or failure) of shard i, whose query left at `sent`, in its health.
void account(served_version& v, uint32_t i, bool answered,
             std::chrono::steady_clock::time_point sent) {
  auto& health = v.health[i];
  if (!answered) {
    ++health.failed;
    return;
  }
  ++health.answered;
  health.latency.add(
    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
}

// What a call of shard i counts: its resends in the shard's health, and, when it is answered
// at its first attempt, its round trip in the lane's first attempts.
struct shard_call {
  std::chrono::steady_clock::time_point sent = std::chrono::steady_clock::now();
  uint32_t resent = 0;

  void answered(served_version& v, uint32_t i) const {
    if (resent == 0)
      v.lanes[i].first_attempts.add(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
  }
};

// The resend callback of remote_run_again for `call`.
auto count_resend(std::shared_ptr<served_version> v, uint32_t i, std::shared_ptr<shard_call> call) {
  return [v, i, call] {
    ++call->resent;
    ++v->health[i].resent;
  };
}

void on_shard_done(serving_root_pointer self, uint64_t id, uint32_t shard,
                   caf::expected<shard_hits> hits) {
  auto found = self->state.pending.find(id);
  if (found == self->state.pending.end())
    return;
  auto& p = found->second;
  if (hits) {
    p.answered[shard] = true;
    for (size_t j = 0; j < hits->ids.size(); ++j)
      p.hits[shard].push_back({hits->scores[j], hits->ids[j]});
  } else if (!p.first_error) {
    p.first_error = hits.error();
  }
  if (--p.open == 0)
    finish_topk(self, id);
}

// How long shard i may take before it is asked again (serving_root_config::shard_attempt_ms).
std::chrono::milliseconds attempt_of(serving_root_pointer self, const served_version& v,
                                     uint32_t i) {
  auto floor = self->state.config.shard_attempt_ms;
  if (floor == 0)
    return std::chrono::milliseconds{0};
  auto p99 = v.lanes[i].first_attempts.quantile_bound(0.99);
  return std::chrono::milliseconds{std::max<int64_t>(floor, static_cast<int64_t>(2 * p99))};
}

// Sends shard i's waiting queries as one batch while its lane has room. Queries already
// answered (at their deadline) are skipped; the batch's timeout is its latest deadline.
void flush_lane(serving_root_pointer self, const std::shared_ptr<served_version>& v, uint32_t i) {
  auto& st = self->state;
  auto& lane = v->lanes[i];
  while (!lane.queued.empty() && lane.in_flight < st.config.shard_batches_in_flight) {
    shard_batch batch;
    std::vector<uint64_t> ids;
    request_context ctx;
    bool bounded = true;
    while (!lane.queued.empty() && ids.size() < st.config.shard_batch_limit) {
      auto id = lane.queued.front();
      lane.queued.pop_front();
      auto found = st.pending.find(id);
      if (found == st.pending.end())
        continue;
      auto& q = found->second.query;
      bounded = bounded && q.context.deadline_us != 0;
      ctx.deadline_us = std::max(ctx.deadline_us, q.context.deadline_us);
      ids.push_back(id);
      batch.queries.push_back(q);
    }
    if (ids.empty())
      return;
    if (!bounded)
      ctx.deadline_us = 0;
    ctx.trace_id = batch.queries.front().context.trace_id;
    auto what = "shard " + std::to_string(i);
    auto sent = std::chrono::steady_clock::now();
    auto fail_all = [self, v, i, ids, sent](const caf::error& err) {
      for (auto id : ids) {
        account(*v, i, false, sent);
        on_shard_done(self, id, i, err);
      }
    };
    if (!v->shards[i]) {
      fail_all(make_error(errc::unavailable, what + " is down"));
      continue;
    }
    ++lane.in_flight;
    ++v->health[i].batches;
    auto call = std::make_shared<shard_call>(shard_call{sent});
    runtime::remote_run_again<shard_batch_hits>(
      self, v->shards[i], ctx, what, attempt_of(self, *v, i), count_resend(v, i, call),
      [self, v, i, ids, sent, fail_all, what, call](shard_batch_hits& hits) {
        --v->lanes[i].in_flight;
        call->answered(*v, i);
        if (hits.answers.size() != ids.size() || hits.errors.size() != ids.size()) {
          fail_all(make_error(errc::unavailable, what + " answered a batch of " +
                                                   std::to_string(ids.size()) + " with " +
                                                   std::to_string(hits.answers.size())));
        } else {
          for (size_t j = 0; j < ids.size(); ++j) {
            account(*v, i, !hits.errors[j], sent);
            if (hits.errors[j])
              on_shard_done(self, ids[j], i, hits.errors[j]);
            else
              on_shard_done(self, ids[j], i, std::move(hits.answers[j]));
          }
        }
        flush_lane(self, v, i);
      },
      [self, v, i, fail_all](const caf::error& err) {
        --v->lanes[i].in_flight;
        fail_all(err);
        flush_lane(self, v, i);
      },
      topk_atom::value, std::move(batch));
  }
}

// Asks shard i alone for request id's query (shard_batches_in_flight = 0).
void send_one(serving_root_pointer self, const std::shared_ptr<served_version>& v, uint32_t i,
              uint64_t id, const shard_query& q) {
  auto what = "shard " + std::to_string(i);
  auto sent = std::chrono::steady_clock::now();
  if (!v->shards[i]) {
    account(*v, i, false, sent);
    return on_shard_done(self, id, i, make_error(errc::unavailable, what + " is down"));
  }
  auto call = std::make_shared<shard_call>(shard_call{sent});
  runtime::remote_run_again<shard_hits>(
    self, v->shards[i], q.context, what, attempt_of(self, *v, i), count_resend(v, i, call),
    [self, v, id, i, sent, call](shard_hits& hits) {
      call->answered(*v, i);
      account(*v, i, true, sent);
      on_shard_done(self, id, i, std::move(hits));
    },
    [self, v, id, i, sent](const caf::error& err) {
      account(*v, i, false, sent);
      on_shard_done(self, id, i, err);
    },
    topk_atom::value, q);
}

// Request id's deadline: it is answered with what the shards gave so far.
void on_deadline(serving_root_pointer self, uint64_t id) {
  auto found = self->state.pending.find(id);
  if (found == self->state.pending.end())
    return;
  auto& p = found->second;
  if (!p.first_error)
    p.first_error = make_error(errc::deadline_exceeded, "the deadline passed");
  finish_topk(self, id);
}

// Sets the root's one timer for deadline_us, unless it is set for an earlier one.
void arm_timer(serving_root_pointer self, int64_t deadline_us) {
  auto& st = self->state;
  if (st.timer_us != 0 && st.timer_us <= deadline_us)
    return;
  st.timer_us = deadline_us;
  auto left = std::chrono::microseconds{std::max<int64_t>(deadline_us - now_us(), 0)};
  self->delayed_send(caf::actor_cast<serving_root_actor>(self), left, tick_atom::value,
                     static_cast<uint64_t>(deadline_us));
}

// The timer set for `deadline_us` fired: answers every request whose deadline has passed, and
// sets the timer for the next one. A timer replaced by an earlier one is ignored.
void on_timer(serving_root_pointer self, int64_t deadline_us) {
  auto& st = self->state;
  if (deadline_us != st.timer_us)
    return;
  st.timer_us = 0;
  auto now = now_us();
  while (!st.deadlines.empty() && st.deadlines.top().first <= now) {
    auto id = st.deadlines.top().second;
    st.deadlines.pop();
    on_deadline(self, id);
  }
  if (!st.deadlines.empty())
    arm_timer(self, st.deadlines.top().first);
}

caf::result<topk_response> topk(serving_root_pointer self, const topk_request& request) {
  auto& st = self->state;
  auto& ctx = request.context;
  if (auto err = st.access.admit(ctx, access_action::query, seconds_since_start(self)))
    return err;
  if (!st.current)
    return make_error(
      errc::unavailable,
      "model " + st.config.model +
        (st.loading ? " is loading version " + st.loading->version : " has no version loaded"));
  auto v = st.current;
  auto query = v->root->query_of(request);
  if (!query)
    return std::move(query.error());
  if (expired(ctx))
    return make_error(errc::deadline_exceeded, "the request arrived after its deadline");
  auto id = st.next_request++;
  auto& p = st.pending[id];
  p.version = v;
  p.promise = self->make_response_promise<topk_response>();
  p.query = shard_query{ctx, std::move(*query), request.k};
  p.principal = ctx.principal;
  p.k = request.k;
  p.allow_partial = request.allow_partial;
  auto n = static_cast<uint32_t>(v->shards.size());
  p.hits.resize(n);
  p.answered.assign(n, false);
  p.open = n;
  ++v->in_flight;
  auto promise = p.promise;
  auto batched = st.config.shard_batches_in_flight > 0;
  if (batched && ctx.deadline_us != 0) {
    st.deadlines.emplace(ctx.deadline_us, id);
    arm_timer(self, ctx.deadline_us);
  }
  // on_shard_done may finish the request (a shard down): copy what the loop needs first.
  auto q = p.query;
  for (uint32_t i = 0; i < n; ++i) {
    if (!batched) {
      send_one(self, v, i, id, q);
      continue;
    }
    v->lanes[i].queued.push_back(id);
    flush_lane(self, v, i);
  }
  return promise;
}

model_status status(serving_root_pointer self) {
  auto& st = self->state;
  model_status s;
  s.model = st.config.model;
  s.state = st.current   ? model_state::available
            : st.loading ? model_state::loading
                         : model_state::unavailable;
  if (st.current)
    s.version = st.current->version;
  if (st.loading)
    s.loading = st.loading->version;
  s.last_error = st.last_error;
  if (auto v = st.current ? st.current : st.loading)
    s.shards = v->health;
  s.principals = st.access.counters();
  s.events = st.events;
  return s;
}

} // namespace

serving_root_actor::behavior_type serving_root(serving_root_pointer self,
                                               serving_root_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.access = access_policy{st.config.access};
  st.started = std::chrono::steady_clock::now();
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& s = self->state;
    if (s.loading && s.loading->supervisor.address() == msg.source)
      fail_load(self,
                make_error(errc::spawn_failed, "shard servers stopped: " + render(msg.reason)));
  });
  if (st.config.load_newest) {
    auto started = begin_load(self, {});
    if (!started) {
      st.last_error = render(started.error());
      log_event(self, "no version loaded at start: " + st.last_error);
    }
  }
  return {
    [self](topk_atom, const topk_request& request) { return topk(self, request); },
    [self](add_atom, const add_items_request& request) {
      return add_items(self, request, seconds_since_start(self));
    },
    [self](load_atom, const request_context& ctx, const std::string& version) {
      return load(self, ctx, version);
    },
    [self](unload_atom, const request_context& ctx) -> caf::result<ok_atom> {
      auto& s = self->state;
      if (auto err = s.access.admit(ctx, access_action::manage, seconds_since_start(self)))
        return err;
      if (auto v = std::exchange(s.current, nullptr)) {
        log_event(self, "version " + v->version + " unloaded by " + ctx.principal);
        retire(self, std::move(v));
      }
      return ok_atom::value;
    },
    [self](status_atom) { return status(self); },
    [self](const supervisor_event& e) { on_supervisor_event(self, e); },
    [self](tick_atom, uint64_t deadline_us) { on_timer(self, static_cast<int64_t>(deadline_us)); },
  };
}

} // namespace darcy::actors
