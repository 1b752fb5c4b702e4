#include "actors/cluster/echo_service.hpp"

#include "runtime/system_config.hpp"

namespace darcy::actors {

echo_actor::behavior_type echo_service(echo_actor::pointer self) {
  return {
    [self](echo_atom, std::string& payload) {
      return caf::make_result(runtime::node_name(self->system()), std::move(payload));
    },
  };
}

} // namespace darcy::actors
