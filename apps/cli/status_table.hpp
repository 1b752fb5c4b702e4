// Renders a cluster_status as the table `darcy cluster status` and `darcy demo` print.
#pragma once

#include <ostream>

#include "messages/cluster/membership.hpp"

namespace darcy::apps {

void print_status(std::ostream& out, const cluster_status& status);

} // namespace darcy::apps
