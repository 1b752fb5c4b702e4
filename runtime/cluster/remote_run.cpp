#include "runtime/cluster/remote_run.hpp"

#include <caf/sec.hpp>

#include "messages/error.hpp"

namespace darcy::runtime {

caf::error remote_failure(const caf::error& err, const std::string& what) {
  if (err.category() == errc_category)
    return err;
  if (err == caf::sec::request_timeout)
    return make_error(errc::deadline_exceeded, what);
  if (err == caf::sec::request_receiver_down || err == caf::sec::no_route_to_receiving_node ||
      err == caf::sec::cannot_connect_to_node)
    return make_error(errc::unavailable, what + " is down");
  return make_error(errc::unavailable, what + ": " + render(err));
}

} // namespace darcy::runtime
