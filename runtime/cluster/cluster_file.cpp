#include "runtime/cluster/cluster_file.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"

namespace darcy::runtime {

caf::error write_cluster_file(const std::string& path, const cluster_file& c) {
  nlohmann::json nodes = nlohmann::json::array();
  for (auto& n : c.nodes)
    nodes.push_back(
      {{"name", n.name}, {"address", to_string(n.address)}, {"pid", n.pid}, {"log", n.log}});
  nlohmann::json j{{"nodes", nodes}, {"secret_file", c.secret_file}, {"netns", c.netns}};
  return base::write_file_atomically(path, j.dump(2) + "\n");
}

caf::expected<cluster_file> read_cluster_file(const std::string& path) {
  auto text = base::read_file(path);
  if (!text)
    return make_error(errc::not_found, "no cluster file " + path + " (darcy cluster up writes it)");
  auto bad = [&](const std::string& why) {
    return make_error(errc::corrupt_file, "cluster file " + path + ": " + why);
  };
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array())
    return bad("not a JSON object with \"nodes\"");
  cluster_file c;
  try {
    c.secret_file = j.value("secret_file", "");
    c.netns = j.value("netns", "");
    for (auto& n : j["nodes"]) {
      auto address = parse_host_port(n.at("address").get<std::string>());
      if (!address)
        return bad(render(address.error()));
      c.nodes.push_back({n.at("name").get<std::string>(), *address, n.at("pid").get<int64_t>(),
                         n.value("log", "")});
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  if (c.nodes.empty())
    return bad("it lists no node");
  return c;
}

caf::expected<host_port> resolve_seed(const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(text, ec) || fs::is_regular_file(text, ec)) {
    auto path = fs::is_directory(text, ec) ? (fs::path{text} / cluster_file_name).string() : text;
    auto c = read_cluster_file(path);
    if (!c)
      return std::move(c.error());
    return c->nodes.front().address;
  }
  auto address = parse_host_port(text);
  if (!address)
    return make_error(errc::invalid_argument,
                      "'" + text + "' is neither HOST:PORT nor a cluster file or directory");
  return address;
}

} // namespace darcy::runtime
