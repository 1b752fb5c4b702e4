// One direct connection per pair of processes. CAF 0.17's automatic connections let two
// processes that first meet through a third (a client and a node it reached through the seed)
// each open a connection to the other at once; when each keeps the one the other closes as
// redundant, both lose their route and every proxy of the other, and messages to them vanish.
#pragma once

#include <chrono>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/node_id.hpp>

namespace darcy::runtime {

/// True when process `from` is the one of the pair {from, to} that opens their direct
/// connection: exactly one of connects_directly(a, b) and connects_directly(b, a) holds for
/// a != b, and neither for a == b.
bool connects_directly(const caf::node_id& from, const caf::node_id& to);

/// Makes `sys` give its direct address (CAF's "basp.default-connectivity-tcp") only to remote
/// processes that connects_directly to it; the other side of each pair keeps routing through
/// the process they share until the connection is made. Idempotent; must run before `sys`
/// first publishes or connects (runtime::publish and runtime::connect_remote call it).
void arbitrate_direct_connections(caf::actor_system& sys);

/// "address:port" of this process's direct connection to `node`; empty when messages to it
/// are routed through another process (or it is not reachable at all).
caf::expected<std::string> direct_route(caf::actor_system& sys, const caf::node_id& node,
                                        std::chrono::milliseconds timeout);

/// True when `handle` is a proxy whose connection to its process was lost: CAF drops what is
/// sent to it without an answer, so a request to it can only time out.
bool is_lost_proxy(const caf::actor& handle);

} // namespace darcy::runtime
