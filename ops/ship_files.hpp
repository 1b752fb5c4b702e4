// Files between this host and cluster members, through a file store spawned on each
// (actors/cluster/file_store.hpp), at the same absolute paths on both sides: what embedding
// shards there read (a snapshot, a chain's links) is sent to them, and what they wrote (a
// checkpoint's parts) is fetched, so that their hosts share no file system with this one.
//
//   ship_files(session, {"b", "c"}, files_under("/srv/exports/ctr/3/embeddings"));
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "messages/checkpoint.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

/// The regular files under `dir`, recursively, as absolute paths, sorted; files under a direct
/// subfolder named in `skip` are left out. Empty for a folder that does not exist.
std::vector<std::string> files_under(const std::string& dir,
                                     const std::vector<std::string>& skip = {});

/// Sends each of `files` (absolute paths on this host) that a member lacks (no file of its size
/// at that path) to the members `nodes` of s's cluster (empty: every member up), where it is
/// written whole or not at all. A write unanswered is sent again (after 250 ms, then twice as
/// long each time) until `timeout` (none: s.timeout()). With `mirrored` (an absolute folder),
/// each member also removes the checkpoint folders ("ckpt-*") directly under it that this host
/// no longer has, so that retention here (whole chains) reaches the copies there; a failure of
/// that is logged, not returned. Nothing to do for an in-process session. errc::no_live_node
/// when no such member is up; the first read, spawn or write error otherwise (files sent
/// before it stay written).
caf::error ship_files(session& s, const std::vector<std::string>& nodes,
                      const std::vector<std::string>& files,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                      const std::string& mirrored = {});

/// Brings each of `files` (absolute path and bytes each) that this host lacks from a member of
/// `nodes` (empty: every member up) that has it, writing it durably; then, with `mirrored`,
/// prunes as ship_files does on the members it asked (none when this host lacked nothing: they
/// share its disk). Nothing to do for an in-process session. errc::not_found naming a file no
/// member has; spawn, fetch and write errors.
caf::error fetch_files(session& s, const std::vector<std::string>& nodes,
                       const std::vector<file_info>& files, const std::string& mirrored = {});

} // namespace darcy::ops
