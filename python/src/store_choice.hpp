// Where a table made from Python keeps its rows, named as one string: "memory",
// "leveldb:DIR" (a database per table under DIR) or "redis://HOST:PORT[/PREFIX]".
#pragma once

#include <string>

#include <caf/error.hpp>

#include "messages/embedding/embedding_config.hpp"

namespace darcy::python {

/// errc::invalid_argument for any other string, or "leveldb:" without a directory.
caf::error check_store(const std::string& store);

/// Sets cfg.backend and cfg.path for the table cfg.name kept in `store` (already checked).
void apply_store(const std::string& store, de_config& cfg);

} // namespace darcy::python
