#include "apps/serving/serving_front.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <nlohmann/json.hpp>

#include "apps/serving/json_codec.hpp"
#include "messages/error.hpp"

namespace darcy::serving {

using clock = std::chrono::steady_clock;

/// The bridge's calls in flight. Each is answered exactly once: by its reply, or by a timeout
/// that the bridge's one sweep timer delivers once it has expired. One timer for all calls
/// instead of a CAF request timeout each: those cost a round trip through CAF's clock thread
/// per request, a tenth of the front's CPU under load.
struct bridge_state {
  struct open_call {
    clock::time_point expires;
    std::function<void()> expire;
  };
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, open_call> open;
  bool sweeping = false;
};

using bridge_pointer = caf::stateful_actor<bridge_state>*;

/// Work the HTTP threads hand to the bridge actor: it sends the front's requests, so that no
/// request spawns an actor of its own.
struct front_task {
  std::function<void(bridge_pointer)> run;
};

} // namespace darcy::serving

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(darcy::serving::front_task)

namespace darcy::serving {

namespace {

/// How long past a request's own deadline the front waits for its root (which answers at the
/// deadline itself).
constexpr std::chrono::milliseconds root_grace{2000};
/// Status and load requests: a load waits for every shard server to load.
constexpr std::chrono::milliseconds manage_timeout{600000};
constexpr std::chrono::milliseconds status_timeout{5000};
/// How often the bridge looks for expired calls while any is open: a call fails at most this
/// much after its timeout.
constexpr std::chrono::milliseconds sweep_period{250};

/// How much earlier than the client's deadline the root answers, so that the answer (its JSON
/// and the HTTP reply) still reaches the client in time: a tenth of the deadline, at most 10 ms.
int64_t reply_margin_us(uint32_t deadline_ms) {
  return std::min<int64_t>(int64_t{deadline_ms} * 100, 10'000);
}

void arm_sweep(bridge_pointer self) {
  if (std::exchange(self->state.sweeping, true))
    return;
  self->delayed_send(self, sweep_period, tick_atom::value);
}

/// Fails the calls that expired, and sweeps again later while any is open.
void sweep(bridge_pointer self) {
  auto& st = self->state;
  st.sweeping = false;
  auto now = clock::now();
  std::vector<std::function<void()>> expired;
  for (auto it = st.open.begin(); it != st.open.end();) {
    if (it->second.expires > now) {
      ++it;
      continue;
    }
    expired.push_back(std::move(it->second.expire));
    it = st.open.erase(it);
  }
  for (auto& expire : expired)
    expire();
  if (!st.open.empty())
    arm_sweep(self);
}

/// Sends (xs...) to `receiver` from the front's bridge actor and calls on_done(expected<R>)
/// once, on a CAF thread: with the reply, or with caf::sec::request_timeout at most
/// sweep_period after `timeout`.
template <class R, class Handle, class OnDone, class... Ts>
void ask_async(const caf::actor& bridge, const Handle& receiver, std::chrono::milliseconds timeout,
               OnDone on_done, Ts... xs) {
  caf::anon_send(bridge, front_task{[=](bridge_pointer self) mutable {
                   auto id = self->state.next_id++;
                   self->state.open.emplace(
                     id, bridge_state::open_call{
                           clock::now() + timeout, [=]() mutable {
                             on_done(caf::expected<R>{caf::make_error(caf::sec::request_timeout)});
                           }});
                   arm_sweep(self);
                   self->request(receiver, caf::infinite, xs...)
                     .then(
                       [=](R& r) mutable {
                         if (self->state.open.erase(id) > 0)
                           on_done(caf::expected<R>{std::move(r)});
                       },
                       [=](caf::error& err) mutable {
                         if (self->state.open.erase(id) > 0)
                           on_done(caf::expected<R>{std::move(err)});
                       });
                 }});
}

http_response error_response(const caf::error& err) {
  auto code = err.category() == errc_category ? to_string(static_cast<errc>(err.code()))
                                              : std::string{"internal"};
  return {http_status_of(err), json_error(code, render(err))};
}

} // namespace

unsigned http_status_of(const caf::error& err) {
  if (err == caf::sec::request_timeout)
    return 504;
  if (err.category() != errc_category)
    return 500;
  switch (static_cast<errc>(err.code())) {
    case errc::invalid_argument:
    case errc::invalid_config:
    case errc::dimension_mismatch:
    case errc::non_finite:
    case errc::empty_batch:
    case errc::batch_too_large:
      return 400;
    case errc::unauthenticated:
      return 401;
    case errc::access_denied:
    case errc::permission_denied:
      return 403;
    case errc::not_found:
    case errc::unknown_service:
      return 404;
    case errc::overloaded:
    case errc::out_of_order:
      return 409;
    case errc::quota_exceeded:
      return 429;
    case errc::unsupported:
      return 501;
    case errc::unavailable:
      return 503;
    case errc::deadline_exceeded:
    case errc::timeout:
      return 504;
    default:
      return 500;
  }
}

serving_front::serving_front(caf::actor_system& sys, serve_config config,
                             std::map<std::string, serving_root_actor> roots,
                             std::map<std::string, std::shared_ptr<served_model>> estimators)
  : sys_(sys),
    config_(std::move(config)),
    roots_(std::move(roots)),
    estimators_(std::move(estimators)) {
  bridge_ = sys_.spawn([](bridge_pointer self) -> caf::behavior {
    return {
      [self](front_task& task) { task.run(self); },
      [self](tick_atom) { sweep(self); },
    };
  });
}

serving_front::~serving_front() {
  caf::anon_send_exit(bridge_, caf::exit_reason::user_shutdown);
}

caf::expected<std::string> serving_front::principal_of(const http_request& req) const {
  if (config_.tokens.empty())
    return std::string{anonymous_principal};
  constexpr std::string_view scheme = "Bearer ";
  if (req.authorization.empty())
    return make_error(errc::unauthenticated, "give a bearer token (Authorization: Bearer ...)");
  if (req.authorization.size() <= scheme.size() ||
      req.authorization.compare(0, scheme.size(), scheme) != 0)
    return make_error(errc::unauthenticated, "the Authorization header must be 'Bearer TOKEN'");
  auto it = config_.tokens.find(req.authorization.substr(scheme.size()));
  if (it == config_.tokens.end())
    return make_error(errc::unauthenticated, "unknown bearer token");
  return it->second;
}

request_context serving_front::context_of(const http_request& req, const std::string& principal,
                                          uint32_t deadline_ms) {
  request_context ctx;
  ctx.deadline_us = deadline_in(std::chrono::milliseconds{deadline_ms});
  ctx.principal = principal;
  ctx.app = req.app.empty() ? "default" : req.app.substr(0, 128);
  ctx.trace_id =
    req.trace_id.empty() ? "darcy-" + std::to_string(next_trace_++) : req.trace_id.substr(0, 128);
  return ctx;
}

void serving_front::handle(http_request req, http_responder respond) {
  auto start = clock::now();
  auto target = req.target.substr(0, req.target.find('?'));
  std::string model;
  std::string verb;
  const serving_root_actor* root = nullptr;
  std::shared_ptr<served_model> estimator;
  constexpr std::string_view prefix = "/v1/models/";
  if (target.size() > prefix.size() && target.compare(0, prefix.size(), prefix) == 0) {
    auto rest = target.substr(prefix.size());
    auto colon = rest.find(':');
    auto name = rest.substr(0, colon);
    verb = colon == std::string::npos ? "" : rest.substr(colon + 1);
    if (auto it = roots_.find(name); it != roots_.end()) {
      model = name;
      root = &it->second;
    } else if (auto e = estimators_.find(name); e != estimators_.end()) {
      model = name;
      estimator = e->second;
    }
  }
  auto route = target == "/metrics"     ? std::string{"metrics"}
               : target == "/v1/models" ? std::string{"models"}
               : model.empty()          ? std::string{"unknown"}
               : verb.empty()           ? std::string{"model"}
                                        : verb;
  auto timed = [this, start, model, route, respond](http_response r) {
    auto ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    metrics_.record(model, route, r.status, ms);
    respond(std::move(r));
  };
  auto method_not_allowed = [&](const char* allowed) {
    timed({405, json_error("method_not_allowed", req.method + " " + target + ": use " + allowed)});
  };
  if (route == "metrics")
    return req.method == "GET" ? metrics(timed) : method_not_allowed("GET");
  if (route == "unknown") {
    if (target.compare(0, prefix.size(), prefix) == 0)
      return timed({404, json_error("not_found", "unknown model in " + target)});
    return timed({404, json_error("not_found", "no such path: " + target)});
  }
  auto principal = principal_of(req);
  if (!principal)
    return timed(error_response(principal.error()));
  if (route == "models")
    return req.method == "GET" ? list(timed) : method_not_allowed("GET");
  if (estimator) {
    req.authorization = *principal;
    return estimator_route(model, estimator, verb, req, timed);
  }
  if (route == "model")
    return req.method == "GET" ? describe(model, *root, timed) : method_not_allowed("GET");
  if (route != "topk" && route != "load" && route != "unload" && route != "items")
    return timed({404, json_error("not_found", "unknown method ':" + verb + "' of model " + model +
                                                 " (topk, items, load, unload)")});
  if (req.method != "POST")
    return method_not_allowed("POST");
  if (route != "topk")
    if (auto refused = may_manage_from(config_, req.peer))
      return timed(error_response(refused));
  req.authorization = *principal; // from here on, the principal
  if (route == "topk")
    return topk(model, *root, req, timed);
  if (route == "items")
    return add_items(model, *root, req, timed);
  manage(model, *root, route == "load", req, timed);
}

void serving_front::estimator_route(const std::string& model,
                                    const std::shared_ptr<served_model>& m, const std::string& verb,
                                    const http_request& req, http_responder respond) {
  if (verb.empty()) {
    if (req.method != "GET")
      return respond(
        {405, json_error("method_not_allowed", req.method + " " + req.target + ": use GET")});
    return respond({200, m->describe(model)});
  }
  if (verb != "predict" && verb != "sync")
    return respond({404, json_error("not_found", "unknown method ':" + verb + "' of model " +
                                                   model + " (predict, sync)")});
  if (req.method != "POST")
    return respond(
      {405, json_error("method_not_allowed", req.method + " " + req.target + ": use POST")});
  auto ctx = context_of(req, req.authorization, config_.default_deadline_ms);
  if (verb == "sync") {
    // A sync changes what the model answers: managed, as :load is.
    if (auto refused = may_manage_from(config_, req.peer))
      return respond(error_response(refused));
    sys_.spawn<caf::detached>([m, model, body = req.body, ctx, respond] {
      auto synced = m->sync(model, body, ctx);
      respond(synced ? http_response{200, std::move(*synced)} : error_response(synced.error()));
    });
    return;
  }
  auto answer = m->predict(model, req.body, ctx, config_.max_deadline_ms);
  respond(answer ? http_response{200, std::move(*answer)} : error_response(answer.error()));
}

void serving_front::topk(const std::string& model, const serving_root_actor& root,
                         const http_request& req, http_responder respond) {
  auto body = parse_topk_body(req.body, config_);
  if (!body)
    return respond(error_response(body.error()));
  body->request.context = context_of(req, req.authorization, body->deadline_ms);
  body->request.context.deadline_us -= reply_margin_us(body->deadline_ms);
  auto trace = body->request.context.trace_id;
  ask_async<topk_response>(
    bridge_, root, std::chrono::milliseconds{body->deadline_ms} + root_grace,
    [respond, model, trace](caf::expected<topk_response> r) {
      if (!r)
        return respond(error_response(r.error()));
      respond({200, topk_json(model, *r, trace)});
    },
    topk_atom::value, std::move(body->request));
}

void serving_front::manage(const std::string& model, const serving_root_actor& root, bool load,
                           const http_request& req, http_responder respond) {
  auto ctx = context_of(req, req.authorization, config_.max_deadline_ms);
  if (!load)
    return ask_async<ok_atom>(
      bridge_, root, status_timeout,
      [respond, model](caf::expected<ok_atom> r) {
        if (!r)
          return respond(error_response(r.error()));
        respond({200, manage_json(model, "")});
      },
      unload_atom::value, ctx);
  auto version = parse_load_body(req.body);
  if (!version)
    return respond(error_response(version.error()));
  ask_async<std::string>(
    bridge_, root, manage_timeout,
    [respond, model](caf::expected<std::string> r) {
      if (!r)
        return respond(error_response(r.error()));
      respond({200, manage_json(model, *r)});
    },
    load_atom::value, ctx, *version);
}

void serving_front::add_items(const std::string& model, const serving_root_actor& root,
                              const http_request& req, http_responder respond) {
  auto items = parse_items_body(req.body);
  if (!items)
    return respond(error_response(items.error()));
  add_items_request r{context_of(req, req.authorization, config_.max_deadline_ms), *items};
  ask_async<add_items_response>(
    bridge_, root, manage_timeout,
    [respond, model, items = std::move(*items)](caf::expected<add_items_response> added) {
      if (!added)
        return respond(error_response(added.error()));
      respond({200, items_json(model, items, *added)});
    },
    add_atom::value, std::move(r));
}

void serving_front::describe(const std::string&, const serving_root_actor& root,
                             http_responder respond) {
  ask_async<model_status>(
    bridge_, root, status_timeout,
    [respond](caf::expected<model_status> r) {
      if (!r)
        return respond(error_response(r.error()));
      respond({200, status_json(*r)});
    },
    status_atom::value);
}

namespace {

/// Collects the status of every root (a root that does not answer is left out) and calls
/// done(statuses) once.
void gather_statuses(const caf::actor& bridge, std::vector<serving_root_actor> roots,
                     std::function<void(std::vector<model_status>)> done) {
  struct gathering {
    std::vector<model_status> statuses;
    size_t open = 0;
    std::function<void(std::vector<model_status>)> done;
  };
  auto g = std::make_shared<gathering>();
  g->open = roots.size();
  g->done = std::move(done);
  if (roots.empty())
    return g->done({});
  auto mutex = std::make_shared<std::mutex>();
  for (auto& root : roots)
    ask_async<model_status>(
      bridge, root, status_timeout,
      [g, mutex](caf::expected<model_status> r) {
        std::unique_lock<std::mutex> guard{*mutex};
        if (r)
          g->statuses.push_back(std::move(*r));
        if (--g->open == 0) {
          guard.unlock();
          std::sort(g->statuses.begin(), g->statuses.end(),
                    [](auto& a, auto& b) { return a.model < b.model; });
          g->done(std::move(g->statuses));
        }
      },
      status_atom::value);
}

std::vector<serving_root_actor> values_of(const std::map<std::string, serving_root_actor>& m) {
  std::vector<serving_root_actor> xs;
  for (auto& [name, root] : m)
    xs.push_back(root);
  return xs;
}

} // namespace

void serving_front::list(http_responder respond) {
  std::vector<std::string> estimators;
  for (auto& [name, m] : estimators_)
    estimators.push_back(m->describe(name));
  gather_statuses(bridge_, values_of(roots_),
                  [respond, estimators](std::vector<model_status> statuses) {
                    auto out = nlohmann::json::parse(models_json(statuses));
                    for (auto& e : estimators)
                      out["models"].push_back(nlohmann::json::parse(e));
                    respond({200, out.dump()});
                  });
}

void serving_front::metrics(http_responder respond) {
  gather_statuses(bridge_, values_of(roots_), [this, respond](std::vector<model_status> statuses) {
    respond({200, metrics_.render(statuses), "text/plain; version=0.0.4"});
  });
}

} // namespace darcy::serving
