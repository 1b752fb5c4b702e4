#include "runtime/cluster/exit_cascade.hpp"

#include <map>
#include <memory>

#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

using test::system_fixture;

class exit_cascade_test : public system_fixture {};

// An owner that stops the actors in `owned` (read when it exits) and quits on stop_atom (normal)
// or crash_atom (an error).
caf::behavior owner(caf::event_based_actor* self, std::shared_ptr<std::vector<caf::actor>> owned) {
  stop_on_exit(*self, [owned] { return *owned; });
  return {
    [self](stop_atom) { self->quit(); },
    [self](crash_atom) { self->quit(make_error(errc::injected_fault, "owner")); },
  };
}

// Whatever the owner's exit reason, the actors it owns when it exits stop with user_shutdown;
// one it no longer owns keeps running.
TEST_F(exit_cascade_test, the_actors_owned_at_exit_stop_with_user_shutdown) {
  struct exit_case {
    const char* name;
    bool crash;
  };
  for (auto& c : std::vector<exit_case>{{"normal exit", false}, {"exit with an error", true}}) {
    SCOPED_TRACE(c.name);
    auto owned = std::make_shared<std::vector<caf::actor>>();
    auto a = sys.spawn(test::test_worker, std::string{"a"});
    auto b = sys.spawn(test::test_worker, std::string{"b"});
    auto kept = sys.spawn(test::test_worker, std::string{"kept"});
    *owned = {a, kept};
    auto o = sys.spawn(owner, owned);
    // Ownership as it stands at exit counts: `b` joins and `kept` leaves before.
    *owned = {a, b};
    for (auto& x : {a, b, kept, o})
      self->monitor(x);
    if (c.crash)
      self->send(o, crash_atom::value);
    else
      self->send(o, stop_atom::value);
    std::map<caf::actor_addr, caf::error> reasons;
    for (int i = 0; i < 3; ++i) {
      auto down = next<caf::down_msg>();
      ASSERT_TRUE(down);
      reasons[down->source] = down->reason;
    }
    EXPECT_EQ(reasons[a.address()], caf::exit_reason::user_shutdown);
    EXPECT_EQ(reasons[b.address()], caf::exit_reason::user_shutdown);
    EXPECT_FALSE(reasons.contains(kept.address()));
    self->send(kept, ping_atom::value);
    self->receive([](const std::string& id) { EXPECT_EQ(id, "kept"); },
                  caf::after(test::patience) >> [] { ADD_FAILURE() << "kept did not answer"; });
    self->send_exit(kept, caf::exit_reason::user_shutdown);
    EXPECT_TRUE(next<caf::down_msg>());
  }
}

} // namespace
} // namespace darcy::runtime
