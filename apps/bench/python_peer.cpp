#include "apps/bench/python_peer.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "messages/error.hpp"

namespace darcy::apps {

caf::expected<std::vector<std::string>> run_python(const std::string& python,
                                                   std::string_view script, const std::string& args,
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
    return make_error(errc::io_error, "the peer failed: " + cmd);
  return lines;
}

std::string blas_in_use() {
  std::error_code ec;
  auto target = std::filesystem::canonical("/usr/lib/x86_64-linux-gnu/libblas.so.3", ec);
  return ec ? std::string{"none"} : target.string();
}

caf::error require_optimized_blas() {
  auto blas = blas_in_use();
  std::printf("blas: %s\n", blas.c_str());
  if (blas.find("openblas") != std::string::npos)
    return {};
  return make_error(errc::unavailable, "the peer would run on the reference BLAS (" + blas +
                                         "); install libopenblas0-pthread (make deps) so that "
                                         "it runs as its users run it");
}

caf::expected<nlohmann::json> peer_result(const std::vector<std::string>& lines,
                                          const std::string& key) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    auto j = nlohmann::json::parse(*it, nullptr, false);
    if (j.is_object() && j.contains(key))
      return j;
  }
  return make_error(errc::io_error, "the peer printed no result with \"" + key + "\"");
}

caf::error require_torch_peer(const std::string& python) {
  if (auto err = require_optimized_blas())
    return err;
  if (std::system((python + " -c 'import torch, numpy' 2>/dev/null").c_str()) == 0)
    return {};
  return make_error(
    errc::unavailable,
    "the peer needs PyTorch: apt-get install python3-torch (or run with --no-peer)");
}

} // namespace darcy::apps
