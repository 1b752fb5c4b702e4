#include "runtime/direct_connections.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <caf/forwarding_actor_proxy.hpp>
#include <caf/io/network/interfaces.hpp>
#include <caf/make_actor.hpp>

#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

caf::node_id node(uint32_t pid, const char* host_hash) {
  auto id = caf::make_node_id(pid, host_hash);
  EXPECT_TRUE(id) << host_hash;
  return id ? *id : caf::node_id{};
}

TEST(connects_directly, exactly_one_process_of_each_pair_opens_the_connection) {
  const char* host_a = "0123456789012345678901234567890123456789";
  const char* host_b = "FEDCBA9876543210FEDCBA9876543210FEDCBA98";
  std::vector<caf::node_id> nodes = {node(1, host_a), node(2, host_a), node(1, host_b),
                                     node(70000, host_b)};
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_FALSE(connects_directly(nodes[i], nodes[i])) << "a process never connects to itself";
    for (size_t j = 0; j < nodes.size(); ++j)
      if (i != j) {
        EXPECT_NE(connects_directly(nodes[i], nodes[j]), connects_directly(nodes[j], nodes[i]))
          << i << " and " << j;
      }
  }
}

class direct_connections_test : public test::system_fixture {
protected:
  caf::actor config_server() {
    return caf::actor_cast<caf::actor>(sys.registry().get(caf::atom("ConfigServ")));
  }

  // The config server's answer: the key and what it holds under it.
  std::pair<std::string, caf::message> get(const std::string& key) {
    std::pair<std::string, caf::message> result;
    self->request(config_server(), test::patience, caf::get_atom::value, key)
      .receive(
        [&](std::string& k, caf::message& value) {
          result = {k, value};
        },
        [](caf::error& err) { ADD_FAILURE() << render(err); });
    return result;
  }
};

TEST_F(direct_connections_test, the_arbiter_stands_in_for_the_config_server_once) {
  auto original = config_server();
  arbitrate_direct_connections(sys);
  auto arbiter = config_server();
  EXPECT_NE(arbiter, original);
  arbitrate_direct_connections(sys);
  EXPECT_EQ(config_server(), arbiter);
}

TEST_F(direct_connections_test, this_process_and_other_keys_are_answered_as_the_config_server_did) {
  arbitrate_direct_connections(sys);
  // The BASP broker stores this process's address when it starts: a request to it starts it,
  // and its store reaches the config server before what this test sends after the answer.
  ASSERT_TRUE(direct_route(sys, sys.node(), test::patience));
  auto own = get("basp.default-connectivity-tcp");
  EXPECT_EQ(own.first, "basp.default-connectivity-tcp");
  using address = caf::io::network::address_listing;
  EXPECT_TRUE((own.second.match_elements<uint16_t, address>()))
    << "this process asking itself is given the address";
  // Other requests pass through to the original, puts included.
  self->send(config_server(), caf::put_atom::value, std::string{"darcy.test"},
             caf::make_message(std::string{"kept"}));
  EXPECT_EQ(to_string(get("darcy.test").second), to_string(caf::make_message("kept")));
}

TEST_F(direct_connections_test,
       local_actors_are_never_lost_proxies_and_an_unknown_node_has_no_route) {
  auto worker = sys.spawn(test::test_worker, std::string{"w"});
  EXPECT_FALSE(is_lost_proxy(worker));
  EXPECT_FALSE(is_lost_proxy(caf::actor{}));
  self->send_exit(worker, caf::exit_reason::kill);
  self->wait_for(worker);
  EXPECT_FALSE(is_lost_proxy(worker)) << "a dead local actor is not a proxy";
  auto route =
    direct_route(sys, node(4242, "0123456789012345678901234567890123456789"), test::patience);
  ASSERT_TRUE(route) << render(route.error());
  EXPECT_EQ(*route, "");
}

TEST_F(direct_connections_test, a_proxy_is_lost_once_killed_as_its_connection_is) {
  // Stands in for the BASP broker, which a proxy tells where it forwards.
  auto broker = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop);
    return {[](int) {}};
  });
  caf::actor_config cfg;
  auto proxy = caf::make_actor<caf::forwarding_actor_proxy, caf::actor>(
    caf::actor_id{42}, node(4242, "0123456789012345678901234567890123456789"), &sys, cfg, broker);
  EXPECT_FALSE(is_lost_proxy(proxy));
  auto* raw = static_cast<caf::actor_proxy*>(caf::actor_cast<caf::abstract_actor*>(proxy));
  raw->kill_proxy(nullptr, caf::exit_reason::remote_link_unreachable);
  EXPECT_TRUE(is_lost_proxy(proxy));
  self->send_exit(broker, caf::exit_reason::kill);
}

} // namespace
} // namespace darcy::runtime
