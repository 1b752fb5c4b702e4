// runtime/thread_systems: a thread that used an actor system and let go of it does not hold up
// that system's destructor on another thread, and can use another system afterwards.
#include "runtime/thread_systems.hpp"

#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

namespace darcy::runtime {
namespace {

TEST(thread_systems, a_system_this_thread_let_go_of_is_destroyed_while_the_thread_waits) {
  caf::actor_system_config cfg;
  auto sys = std::make_unique<caf::actor_system>(cfg);
  sys->await_actors_before_shutdown(false);
  std::promise<void> used;
  std::promise<void> destroyed;
  std::thread user{[&, done = destroyed.get_future()] {
    { caf::scoped_actor self{*sys}; }
    let_go_of_actor_systems();
    used.set_value();
    done.wait(); // without the let-go, the destructor below would wait for this thread
  }};
  used.get_future().wait();
  sys.reset();
  destroyed.set_value();
  user.join();
  caf::actor_system_config other_cfg;
  caf::actor_system other{other_cfg};
  caf::scoped_actor self{other};
  EXPECT_TRUE(self->address());
}

} // namespace
} // namespace darcy::runtime
