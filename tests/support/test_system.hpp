// Shared test support: an actor system with Darcy's types plus "test.worker", an actor that
// answers ping with its id, crashes on crash_atom and exits normally on stop_atom; and
// helpers that wait for messages with a generous safety deadline (never a timing assertion).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/error.hpp"
#include "runtime/system_config.hpp"

namespace darcy::test {

/// Deadline for anything a test waits for; reached only when the behaviour under test is broken.
inline constexpr auto patience = std::chrono::seconds(20);

caf::behavior test_worker(caf::event_based_actor* self, std::string id);

struct test_config : runtime::system_config {
  explicit test_config(std::string node = "test");
};

/// Stops `actor` when it goes out of scope and waits until it is gone: CAF 0.17 crashes when an
/// actor system is destroyed under a running actor, and an early ASSERT must not cause that.
class stop_on_exit {
public:
  stop_on_exit(caf::actor_system& sys, caf::actor actor) : sys_(sys), actor_(std::move(actor)) {}
  ~stop_on_exit();
  stop_on_exit(const stop_on_exit&) = delete;
  stop_on_exit& operator=(const stop_on_exit&) = delete;

private:
  caf::actor_system& sys_;
  caf::actor actor_;
};

/// An actor system and a scoped actor, torn down after each test.
class system_fixture : public ::testing::Test {
protected:
  system_fixture();

  /// The next message of type T, or nullopt (and a test failure) after `patience`.
  template <class T>
  std::optional<T> next() {
    std::optional<T> result;
    self->receive([&](T& x) { result = std::move(x); },
                  caf::after(patience) >> [] { ADD_FAILURE() << "no message within deadline"; });
    return result;
  }

  test_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
};

} // namespace darcy::test
