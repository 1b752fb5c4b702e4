// Every atom of the Darcy protocol, in one place. Atoms name operations in typed actor
// interfaces (interfaces.hpp); CAF limits an atom to 10 characters.
#pragma once

#include <caf/atom.hpp>

namespace darcy {

using join_atom = caf::atom_constant<caf::atom("join")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using unregister_atom = caf::atom_constant<caf::atom("unregistr")>;
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;
using backward_atom = caf::atom_constant<caf::atom("backward")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using unsubscribe_atom = caf::atom_constant<caf::atom("unsubscrib")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using ok_atom = caf::atom_constant<caf::atom("ok")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using echo_atom = caf::atom_constant<caf::atom("echo")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using registry_atom = caf::atom_constant<caf::atom("registry")>;
using probe_atom = caf::atom_constant<caf::atom("probe")>;
using kill_node_atom = caf::atom_constant<caf::atom("kill_node")>;
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using trusted_atom = caf::atom_constant<caf::atom("trusted")>;
using children_atom = caf::atom_constant<caf::atom("children")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using prune_atom = caf::atom_constant<caf::atom("prune")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using crash_atom = caf::atom_constant<caf::atom("crash")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
// Distributed WALS (wals_interfaces.hpp).
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
using view_atom = caf::atom_constant<caf::atom("view")>;
using write_atom = caf::atom_constant<caf::atom("write")>;
using add_atom = caf::atom_constant<caf::atom("add")>;
using begin_atom = caf::atom_constant<caf::atom("begin")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using gram_atom = caf::atom_constant<caf::atom("gram")>;
using save_atom = caf::atom_constant<caf::atom("save")>;
using load_atom = caf::atom_constant<caf::atom("load")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using chief_atom = caf::atom_constant<caf::atom("chief")>;
using events_atom = caf::atom_constant<caf::atom("events")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
// Estimator parameter servers (estimator_interfaces.hpp).
using step_atom = caf::atom_constant<caf::atom("step")>;
// Retrieval serving (serving_interfaces.hpp).
using topk_atom = caf::atom_constant<caf::atom("topk")>;
using unload_atom = caf::atom_constant<caf::atom("unload")>;

/// Key of the cluster registry handle in each node's local CAF actor registry.
inline constexpr caf::atom_value registry_key = caf::atom("darcy_reg");

} // namespace darcy
