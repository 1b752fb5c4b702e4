#include "runtime/process/netns.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "messages/error.hpp"
#include "runtime/process/process.hpp"

namespace darcy::runtime {

namespace {

/// The `ip` program, or empty.
std::string ip_program() {
  for (auto dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    auto path = std::string{dir} + "/ip";
    if (::access(path.c_str(), X_OK) == 0)
      return path;
  }
  return {};
}

/// Runs argv to completion; its exit code, and its stderr in `err`.
caf::expected<int> run_program(const std::vector<std::string>& argv, std::string& err) {
  auto p = child_process::start(argv);
  if (!p)
    return std::move(p.error());
  p->wait_for_line("\x01", std::chrono::seconds(30)); // drains stdout to its end
  auto code = p->wait(std::chrono::seconds(30));
  err = p->read_stderr();
  return code;
}

/// A subnet octet that no route of this host uses yet.
int free_subnet(int first) {
  std::string routes, err;
  auto ip = ip_program();
  auto p = child_process::start({ip, "-4", "route", "show"});
  if (p) {
    p->wait_for_line("\x01", std::chrono::seconds(10));
    p->wait(std::chrono::seconds(10));
    routes = p->stdout_seen();
  }
  for (int k = 0; k < 250; ++k) {
    int s = (first + k) % 250 + 1;
    if (routes.find("10.213." + std::to_string(s) + ".") == std::string::npos)
      return s;
  }
  return first % 250 + 1;
}

} // namespace

bool netns_network::available() {
  return ::geteuid() == 0 && !ip_program().empty() && std::filesystem::exists("/proc/self/ns/net");
}

caf::error netns_network::run(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{ip_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string err;
  auto code = run_program(argv, err);
  if (!code)
    return std::move(code.error());
  if (*code != 0) {
    std::string line = "ip";
    for (auto& a : args)
      line += " " + a;
    return make_error(errc::io_error, line + " failed: " + err);
  }
  return {};
}

caf::error netns_network::add_link(const std::string& outside, const std::string& inside_ns,
                                   const std::string& inside, const std::string& address) {
  // `outside` ends on the bridge; `inside` carries `address`, in inside_ns (empty: this host).
  std::vector<std::vector<std::string>> steps{
    {"link", "add", inside, "type", "veth", "peer", "name", outside},
    {"link", "set", outside, "netns", bridge_ns()},
    {"-n", bridge_ns(), "link", "set", outside, "master", "br0"},
    {"-n", bridge_ns(), "link", "set", outside, "up"}};
  if (!inside_ns.empty()) {
    steps.push_back({"link", "set", inside, "netns", inside_ns});
    steps.push_back({"-n", inside_ns, "addr", "add", address + "/24", "dev", inside});
    steps.push_back({"-n", inside_ns, "link", "set", inside, "up"});
    steps.push_back({"-n", inside_ns, "link", "set", "lo", "up"});
  } else {
    steps.push_back({"addr", "add", address + "/24", "dev", inside});
    steps.push_back({"link", "set", inside, "up"});
  }
  for (auto& s : steps)
    if (auto err = run(s))
      return err;
  return {};
}

caf::expected<std::unique_ptr<netns_network>> netns_network::create(size_t nodes) {
  if (!available())
    return make_error(errc::unsupported, "network namespaces need root and iproute2's ip");
  static std::atomic<int> counter{0};
  auto id = (static_cast<int>(::getpid()) * 31 + counter++) % 0xfff;
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "dz%03x", id);
  std::unique_ptr<netns_network> net{new netns_network(prefix, free_subnet(id))};
  for (auto& step : std::vector<std::vector<std::string>>{
         {"netns", "add", net->bridge_ns()},
         {"-n", net->bridge_ns(), "link", "add", "br0", "type", "bridge"},
         {"-n", net->bridge_ns(), "link", "set", "br0", "up"}})
    if (auto err = net->run(step))
      return err;
  if (auto err = net->add_link(net->prefix_ + "hb", "", net->prefix_ + "h", net->host_address()))
    return err;
  net->host_link_ = true;
  for (size_t i = 0; i < nodes; ++i)
    if (auto added = net->add_node(); !added)
      return std::move(added.error());
  return net;
}

netns_network::~netns_network() {
  if (released_)
    return;
  if (host_link_)
    run({"link", "del", prefix_ + "h"});
  for (size_t i = 0; i < nodes_; ++i)
    run({"netns", "del", name(i)});
  run({"netns", "del", bridge_ns()});
}

std::string netns_network::release() {
  released_ = true;
  return prefix_ + " " + std::to_string(subnet_) + " " + std::to_string(nodes_);
}

caf::error netns_network::remove(const std::string& handle) {
  std::istringstream in{handle};
  std::string prefix;
  int subnet = 0;
  size_t nodes = 0;
  if (!(in >> prefix >> subnet >> nodes) || prefix.rfind("dz", 0) != 0)
    return make_error(errc::invalid_argument, "'" + handle + "' names no network of netns_network");
  netns_network net{prefix, subnet};
  net.nodes_ = nodes;
  net.host_link_ = true;
  return {}; // its destructor takes everything down
}

std::string netns_network::name(size_t i) const {
  return prefix_ + "-n" + std::to_string(i);
}

std::string netns_network::address(size_t i) const {
  return "10.213." + std::to_string(subnet_) + "." + std::to_string(i + 1);
}

std::string netns_network::host_address() const {
  return "10.213." + std::to_string(subnet_) + ".254";
}

caf::expected<size_t> netns_network::add_node() {
  if (nodes_ >= 200)
    return make_error(errc::invalid_argument, "netns_network: at most 200 nodes");
  auto i = nodes_;
  if (auto err = run({"netns", "add", name(i)}))
    return err;
  ++nodes_; // the destructor removes it from here on
  if (auto err = add_link(prefix_ + "b" + std::to_string(i), name(i),
                          prefix_ + "n" + std::to_string(i), address(i)))
    return err;
  return i;
}

caf::error netns_network::cut(size_t i) {
  return run({"-n", bridge_ns(), "link", "set", prefix_ + "b" + std::to_string(i), "down"});
}

caf::error netns_network::heal(size_t i) {
  return run({"-n", bridge_ns(), "link", "set", prefix_ + "b" + std::to_string(i), "up"});
}

std::vector<std::string> netns_network::in_namespace(size_t i,
                                                     const std::vector<std::string>& argv) const {
  std::vector<std::string> out{ip_program(), "netns", "exec", name(i)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

} // namespace darcy::runtime
