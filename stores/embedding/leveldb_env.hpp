// The LevelDB environment every Darcy database shares: LevelDB's default one, except that table
// files are read with pread (into the shared block cache) instead of through mmap. Mapped table
// pages count in the process's resident set, which then grows with the database, not with the
// memory budget.
#pragma once

#include <leveldb/env.h>

namespace darcy::stores {

/// The shared environment; never freed, so that it outlives every database. Raises the soft limit
/// on open files to the hard one the first time, as each table file holds a descriptor while
/// LevelDB's table cache keeps it.
leveldb::Env* leveldb_env();

} // namespace darcy::stores
