// The messaging benchmark's baseline: a plain Boost.Asio TCP echo over loopback with
// length-prefixed frames, driven the same way as the actor probe (count, payload, window).
#pragma once

#include <caf/expected.hpp>

#include "messages/cluster/probe_messages.hpp"

namespace darcy::apps {

/// Runs an echo server thread and a client in this process; `spec.host`/`port` are ignored.
caf::expected<probe_result> run_tcp_echo(const probe_spec& spec);

} // namespace darcy::apps
