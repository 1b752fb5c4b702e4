#include "apps/progress/plot.hpp"

#include <cstdlib>
#include <fstream>

#include "messages/error.hpp"

namespace darcy::apps {

caf::error draw_with_gnuplot(const std::string& script_path, const std::string& script,
                             const std::string& png) {
  {
    std::ofstream out{script_path};
    out << script;
    if (!out)
      return make_error(errc::io_error, "cannot write " + script_path);
  }
  auto command = "gnuplot '" + script_path + "' 2>&1";
  if (std::system(command.c_str()) != 0)
    return make_error(errc::io_error, "gnuplot failed to draw " + png +
                                        " (is gnuplot installed? make deps installs it)");
  return {};
}

} // namespace darcy::apps
