// Network namespaces for multi-host drills on one machine: each node gets a namespace of its
// own with an address of its own, linked by a veth pair to a bridge that lives in a namespace
// too, and this host joins the bridge through one more veth pair. A member is cut off by taking
// its link down at the bridge, and healed by bringing it up. Needs root and iproute2's `ip`.
// Traffic stays on the bridge: the subnet is 10.213.S.0/24, S chosen free of this host's routes.
//
//   auto net = runtime::netns_network::create(3);
//   child_process::start(net->in_namespace(1, {"darcy", "node", "--listen", net->address(1) +
//   ":0"})); net->cut(1);  ...  net->heal(1);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::runtime {

class netns_network {
public:
  /// Whether this process can make namespaces: root, with `ip` on the PATH.
  static bool available();

  /// Creates the bridge and `nodes` node namespaces. errc::unsupported when not available();
  /// errc::io_error naming the `ip` command that failed (what was made is removed again).
  static caf::expected<std::unique_ptr<netns_network>> create(size_t nodes);

  /// Removes every namespace and link it made, unless release() was called.
  ~netns_network();

  /// Leaves the namespaces in place when this object goes (a cluster that outlives the
  /// command that started it); returns what remove() needs to take them down later.
  std::string release();
  /// Takes down the namespaces and links that a network with `handle` (release()'s result)
  /// made. errc::invalid_argument for a handle release() did not write.
  static caf::error remove(const std::string& handle);
  netns_network(const netns_network&) = delete;
  netns_network& operator=(const netns_network&) = delete;

  size_t size() const { return nodes_; }
  /// Node i's namespace, and its address on the bridge.
  std::string name(size_t i) const;
  std::string address(size_t i) const;
  /// This host's address on the bridge.
  std::string host_address() const;

  /// One more node namespace (a replacement machine); returns its index.
  caf::expected<size_t> add_node();
  /// Takes node i's link down at the bridge (a partition), or brings it up again.
  caf::error cut(size_t i);
  caf::error heal(size_t i);

  /// `argv` to run inside node i's namespace: `ip netns exec NAME argv...` (the program keeps
  /// the process, so its pid is the program's).
  std::vector<std::string> in_namespace(size_t i, const std::vector<std::string>& argv) const;

private:
  netns_network(std::string prefix, int subnet) : prefix_(std::move(prefix)), subnet_(subnet) {}
  caf::error run(const std::vector<std::string>& args) const;
  std::string bridge_ns() const { return prefix_ + "-br"; }
  caf::error add_link(const std::string& outside, const std::string& inside_ns,
                      const std::string& inside, const std::string& address);

  std::string prefix_;
  int subnet_;
  size_t nodes_ = 0;
  bool host_link_ = false;
  bool released_ = false;
};

} // namespace darcy::runtime
