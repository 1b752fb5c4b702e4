#include "apps/bench/mips_peer.hpp"

#include <cstdio>
#include <fstream>

#include "messages/error.hpp"

namespace darcy::apps {

caf::error write_raw(const std::string& path, const compute::row_matrix& m) {
  std::ofstream out{path, std::ios::binary};
  out.write(reinterpret_cast<const char*>(m.data()),
            static_cast<std::streamsize>(m.size() * sizeof(float)));
  return out ? caf::error{} : make_error(errc::io_error, path);
}

} // namespace darcy::apps
