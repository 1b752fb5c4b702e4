// runtime/detached_actor_type: actors spawned by a detached type's name run on threads of their
// own, so that a handler that blocks leaves the scheduler free; plain types stay scheduled.
#include "runtime/detached_actor_type.hpp"

#include <future>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

namespace darcy::runtime {
namespace {

/// What an adder's handler waits for before it answers, when set (spawn arguments must be
/// serializable, so the gate is not one).
std::shared_future<void> gate;

/// Answers an int with the int plus one.
caf::behavior adder(caf::event_based_actor*) {
  return {[](int x) { return x + 1; }};
}

/// An adder that answers once `gate` (when set) is ready.
caf::behavior waiting_adder(caf::event_based_actor*) {
  return {[](int x) {
    if (gate.valid())
      gate.wait();
    return x + 1;
  }};
}

struct one_thread_config : caf::actor_system_config {
  one_thread_config() {
    set("scheduler.max-threads", size_t{1});
    set("logger.console", caf::atom("none"));
    add_actor_type("plain", adder);
    add_detached_actor_type(*this, "detached", waiting_adder);
  }
};

bool detached(const caf::actor& a) {
  return caf::actor_cast<caf::abstract_actor*>(a)->getf(caf::abstract_actor::is_detached_flag);
}

TEST(detached_actor_type, only_the_detached_type_is_spawned_detached_and_both_answer) {
  one_thread_config cfg;
  caf::actor_system sys{cfg};
  struct row {
    const char* type;
    bool detached;
  };
  for (auto [type, want] : {row{"plain", false}, row{"detached", true}}) {
    SCOPED_TRACE(type);
    auto spawned = sys.spawn<caf::actor>(type, caf::make_message());
    ASSERT_TRUE(spawned) << sys.render(spawned.error());
    EXPECT_EQ(detached(*spawned), want);
    caf::scoped_actor self{sys};
    self->request(*spawned, caf::infinite, 41)
      .receive([](int y) { EXPECT_EQ(y, 42); },
               [&](caf::error& err) { FAIL() << sys.render(err); });
    self->send_exit(*spawned, caf::exit_reason::user_shutdown);
  }
}

TEST(detached_actor_type, a_blocked_detached_handler_leaves_the_only_scheduler_thread_free) {
  one_thread_config cfg;
  caf::actor_system sys{cfg};
  std::promise<void> release;
  gate = release.get_future().share();
  auto blocked = sys.spawn<caf::actor>("detached", caf::make_message());
  ASSERT_TRUE(blocked);
  caf::scoped_actor self{sys};
  auto answer = self->request(*blocked, caf::infinite, 1); // its handler waits for `release`
  // A scheduled actor still runs on the one scheduler thread. Were the blocked actor scheduled,
  // this request would end with a timeout error instead.
  auto scheduled = sys.spawn(adder);
  self->request(scheduled, std::chrono::minutes(1), 9)
    .receive([](int y) { EXPECT_EQ(y, 10); }, [&](caf::error& err) { FAIL() << sys.render(err); });
  release.set_value();
  answer.receive([](int y) { EXPECT_EQ(y, 2); },
                 [&](caf::error& err) { FAIL() << sys.render(err); });
  self->send_exit(*blocked, caf::exit_reason::user_shutdown);
  self->send_exit(scheduled, caf::exit_reason::user_shutdown);
  gate = {};
}

} // namespace
} // namespace darcy::runtime
