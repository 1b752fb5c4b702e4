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

caf::expected<std::vector<std::string>> run_python(const std::string& python,
                                                   const std::string& script,
                                                   const std::string& args,
                                                   const std::string& dir, bool echo) {
  auto path = dir + "/peer.py";
  std::ofstream{path} << script;
  auto cmd = python + " " + path + " " + args;
  auto pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr)
    return make_error(errc::io_error, "cannot run " + cmd);
  std::vector<std::string> lines;
  char line[4096] = {};
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    lines.emplace_back(line);
    if (echo)
      std::printf("  %s", line);
  }
  if (pclose(pipe) != 0)
    return make_error(errc::io_error, "the FAISS peer failed: " + cmd);
  return lines;
}

} // namespace darcy::apps
