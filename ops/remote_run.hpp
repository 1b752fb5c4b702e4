// remote_run for a model author: calls the sub-model registered in the cluster under `service`
// with a request's context, and waits for its reply. The deadline bounds the whole call;
// failures come back as runtime::remote_run maps them (errc::deadline_exceeded,
// errc::unavailable for a service that is gone or not registered, the service's own error).
//
//   auto hits = ops::remote_run<shard_hits>(*session, "serving.songs.3.shard.0",
//                                           {.deadline_us = deadline_in(50ms)},
//                                           topk_atom::value, query);
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "messages/cluster/membership.hpp"
#include "ops/session.hpp"
#include "runtime/cluster/remote_run.hpp"

namespace darcy::ops {

/// The actor registered as `service`; errc::unavailable when none is.
caf::expected<caf::actor> resolve_service(session& s, const std::string& service);

template <class Reply, class... Ts>
caf::expected<Reply> remote_run(session& s, const std::string& service, const request_context& ctx,
                                Ts&&... xs) {
  auto target = resolve_service(s, service);
  if (!target)
    return std::move(target.error());
  return runtime::remote_run<Reply>(s.system(), *target, ctx, service, std::forward<Ts>(xs)...);
}

} // namespace darcy::ops
