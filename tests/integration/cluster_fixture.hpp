// Integration-test support: a fixture that starts `darcy node` processes with fast heartbeats,
// connects a client session to them, and waits for the registry's cluster events.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::test {

constexpr auto heartbeat_timeout = std::chrono::milliseconds(2000);

class cluster_test : public ::testing::Test {
protected:
  void SetUp() override {
    config_ = write_temp_file("cluster.toml",
                              "[node]\nchaos = true\n"
                              "[cluster]\nheartbeat_interval_ms = 200\n"
                              "heartbeat_timeout_ms = 2000\n");
  }

  node_process node(const std::string& name, const std::string& join = {}) {
    auto n = start_node(name, join, {"--config", config_, "--threads", "1"});
    if (!n) {
      ADD_FAILURE() << "starting node " << name << ": " << render(n.error());
      std::abort();
    }
    return std::move(*n);
  }

  std::unique_ptr<ops::session> connect(
    const runtime::host_port& seed,
    std::chrono::milliseconds timeout = ops::session_options{}.timeout) {
    ops::session_options opts;
    opts.timeout = timeout;
    opts.seed = seed;
    opts.name = "test-client";
    opts.threads = 2;
    auto s = ops::session::open(opts);
    if (!s) {
      ADD_FAILURE() << render(s.error());
      std::abort();
    }
    return std::move(*s);
  }

  // Nodes a (the seed), b and c.
  std::tuple<node_process, node_process, node_process> start_three() {
    auto a = node("a");
    auto seed = runtime::to_string(a.address);
    auto b = node("b", seed);
    auto c = node("c", seed);
    return {std::move(a), std::move(b), std::move(c)};
  }

  // Spawns a supervisor with `spec` on the node at `where`.
  void supervise_on(ops::session& s, const runtime::host_port& where, const supervisor_spec& spec) {
    auto agent = runtime::connect_agent(s.system(), where);
    ASSERT_TRUE(agent) << render(error_of(agent));
    auto sup = runtime::ask<caf::actor>(s.system(), *agent, patience, spawn_atom::value,
                                        std::string{"darcy.supervisor"}, caf::make_message(spec));
    ASSERT_TRUE(sup) << render(error_of(sup));
  }

  // Subscribes `self` to the registry and returns once the registry has processed it.
  void subscribe(caf::scoped_actor& self, ops::session& s) {
    self->send(s.registry(), subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    self->request(s.registry(), patience, status_atom::value)
      .receive([](const cluster_status&) {}, [](caf::error& err) { FAIL() << render(err); });
  }

  // Waits for a cluster event matching `pred` until `deadline`; false when none came.
  template <class Pred>
  bool await_event(caf::scoped_actor& self, std::chrono::milliseconds deadline, Pred pred) {
    auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      bool matched = false, timed_out = false;
      self->receive([&](const cluster_event& e) { matched = pred(e); },
                    caf::after(left) >> [&] { timed_out = true; });
      if (matched)
        return true;
      if (timed_out)
        return false;
    }
  }

  // A supervisor on the node at `where` whose echo child is placed on `first`, falling back to
  // `second`; returns once the echo service is up on `first`.
  void supervise_echo_on(caf::scoped_actor& self, ops::session& s, const runtime::host_port& where,
                         const std::string& first, const std::string& second) {
    supervisor_spec spec{
      "echo-sup",
      restart_strategy::one_for_one,
      5,
      60000,
      {{"echo", "darcy.echo", {}, {first, second}, restart_type::permanent, "echo"}}};
    supervise_on(s, where, spec);
    ASSERT_TRUE(await_event(self, patience, [&](const cluster_event& e) {
      return e.kind == cluster_event_kind::service_up && e.service == "echo" && e.node == first;
    }));
  }

  void supervise_echo_on_b(caf::scoped_actor& self, ops::session& s,
                           const runtime::host_port& where) {
    supervise_echo_on(self, s, where, "b", "c");
  }

  std::string echo_node(ops::session& s, const std::string& payload) {
    auto info = s.lookup("echo");
    if (!info)
      return "lookup failed: " + render(info.error());
    caf::scoped_actor self{s.system()};
    std::string node;
    self->request(caf::actor_cast<echo_actor>(info->actor), patience, echo_atom::value, payload)
      .receive(
        [&](const std::string& n, const std::string& p) {
          EXPECT_EQ(p, payload);
          node = n;
        },
        [&](caf::error& err) { node = "echo failed: " + render(err); });
    return node;
  }

  std::string config_;
};

} // namespace darcy::test
