#include "ops/remote_run.hpp"

#include "messages/error.hpp"

namespace darcy::ops {

caf::expected<caf::actor> resolve_service(session& s, const std::string& service) {
  auto info = s.lookup(service);
  if (!info) {
    if (is(info.error(), errc::unknown_service))
      return make_error(errc::unavailable, service + " is not registered");
    return std::move(info.error());
  }
  return info->actor;
}

} // namespace darcy::ops
