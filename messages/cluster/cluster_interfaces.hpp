// The typed actor interfaces of the runtime's services. A client holding one of these handles
// can only send what the service understands; the compiler checks every request.
#pragma once

#include <string>
#include <vector>

#include <caf/node_id.hpp>
#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/checkpoint.hpp"
#include "messages/cluster/chaos_messages.hpp"
#include "messages/cluster/membership.hpp"
#include "messages/cluster/probe_messages.hpp"
#include "messages/cluster/supervision.hpp"

namespace darcy {

/// The cluster registry, hosted by the seed: membership, heartbeats and the name service.
/// lookup fails with errc::unknown_service; join fails with errc::duplicate_node when a live
/// member already uses the name. heartbeat(name, incarnation) answers the member's current
/// incarnation (re-admitting a member that was down) or errc::unknown_node when the registry
/// does not know the name (a restarted seed, or a pruned member): the member then joins again.
/// register fails with errc::node_unreachable for a service on a member that is not up.
/// Subscribers receive cluster_event messages. With a cluster secret, a process must first
/// present its credential (hello; errc::permission_denied when wrong); every other request of
/// a process that did not is refused with errc::permission_denied. trusted(node) tells a node
/// agent whether that node presented it.
using registry_actor =
  caf::typed_actor<caf::replies_to<hello_atom, std::string>::with<ok_atom>,
                   caf::replies_to<trusted_atom, caf::node_id>::with<bool>,
                   caf::replies_to<join_atom, member_info>::with<cluster_status>,
                   caf::replies_to<leave_atom, std::string>::with<ok_atom>,
                   caf::replies_to<heartbeat_atom, std::string, uint64_t>::with<uint64_t>,
                   caf::replies_to<register_atom, service_info>::with<ok_atom>,
                   caf::replies_to<unregister_atom, std::string>::with<ok_atom>,
                   caf::replies_to<lookup_atom, std::string>::with<service_info>,
                   caf::replies_to<status_atom>::with<cluster_status>,
                   caf::reacts_to<subscribe_atom, caf::actor>,
                   caf::reacts_to<unsubscribe_atom, caf::actor>, caf::reacts_to<tick_atom>>;

/// One per node, published at the node's listen address. spawn starts an actor type registered
/// by name on this node (errc::spawn_failed otherwise) and answers its handle, which is its
/// chaos gate's on a node with chaos gates. A spawn with a request id (not 0) is answered, when
/// the id comes again (a retry after a lost message, or a late copy), with what the first
/// answer was, without spawning again; the agent remembers its last 1,024 ids; (chaos_command,
/// gate) passes the command to that gate (errc::not_found on a node without gates, or for a handle
/// this agent did not hand out). With an invalid gate handle the command is for the whole node:
/// every gate it runs, and a disruption also for every gate it spawns later, until healed; it
/// answers their summed counts. kill_node SIGKILLs the node's process. join makes the node a member
/// through its registry and keeps it one from then on. With a cluster secret, join, spawn, probe,
/// chaos commands and kill_node are refused (errc::permission_denied) to a process that has not
/// presented the credential to the registry.
using node_agent_actor = caf::typed_actor<
  caf::replies_to<ping_atom>::with<std::string>,
  caf::replies_to<join_atom, member_info>::with<cluster_status>,
  caf::replies_to<echo_atom, std::string>::with<std::string>,
  caf::replies_to<registry_atom>::with<registry_actor>,
  caf::replies_to<spawn_atom, std::string, caf::message>::with<caf::actor>,
  caf::replies_to<spawn_atom, std::string, caf::message, uint64_t>::with<caf::actor>,
  caf::replies_to<probe_atom, probe_spec>::with<probe_result>,
  caf::replies_to<chaos_command, caf::actor>::with<chaos_stats>, caf::reacts_to<kill_node_atom>,
  caf::reacts_to<tick_atom>>;

/// A supervisor. Subscribers receive supervisor_event messages; retry is internal. It hears the
/// registry's cluster events: a child on a member declared down is treated as exited (and
/// told to exit, which fences it should that member resume).
using supervisor_actor =
  caf::typed_actor<caf::replies_to<children_atom>::with<std::vector<child_info>>,
                   caf::reacts_to<cluster_event>, caf::reacts_to<subscribe_atom, caf::actor>,
                   caf::reacts_to<retry_atom, std::string>>;

/// The echo service: answers with the name of the node it runs on and the payload.
using echo_actor =
  caf::typed_actor<caf::replies_to<echo_atom, std::string>::with<std::string, std::string>>;

/// A node's file store (actors/cluster/file_store.hpp), at absolute paths on its node:
/// (write, path, bytes) replaces the file with `bytes`, atomically, creating its folders;
/// (fetch, path) answers its bytes; (stats, files) answers the paths of `files` (absolute
/// path and bytes each) whose file is missing or of another size; (prune, root) answers the
/// names of the checkpoint folders ("ckpt-*") directly under `root`, and (prune, root, names)
/// removes those of them named, answering how many it removed.
using file_store_actor = caf::typed_actor<
  caf::replies_to<write_atom, std::string, std::string>::with<ok_atom>,
  caf::replies_to<fetch_atom, std::string>::with<std::string>,
  caf::replies_to<stats_atom, std::vector<file_info>>::with<std::vector<std::string>>,
  caf::replies_to<prune_atom, std::string>::with<std::vector<std::string>>,
  caf::replies_to<prune_atom, std::string, std::vector<std::string>>::with<uint64_t>>;

} // namespace darcy
