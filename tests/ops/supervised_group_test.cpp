// A supervised group whose children quit as they start never hands out a null actor (moe train
// once crashed on one), and why they quit reaches the caller: as the group's error, or as the
// supervisor's when it gives up after the group started.
#include "ops/supervised_group.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "actors/moe/expert_actor.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"

namespace darcy::ops {
namespace {

TEST(supervised_group, children_that_quit_as_they_start_are_never_null_handles_and_say_why) {
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  auto status = (*s)->status();
  ASSERT_TRUE(status) << render(status.error());
  auto targets = runtime::live_targets(*status, {});
  ASSERT_TRUE(targets) << render(targets.error());
  // An expert refuses a learning rate that is not finite: it quits as soon as it is spawned,
  // every time the supervisor restarts it.
  moe_config layer{.dim = 4};
  layer.gating = {.experts = 8, .k = 1};
  group_spec spec{"quitters", "expert", actors::expert_state::name, 8, [&](size_t e) {
                    return caf::make_message(expert_config{
                      layer, static_cast<uint32_t>(e), std::numeric_limits<double>::infinity()});
                  }};
  auto group = start_supervised_group(**s, *targets, spec);
  std::string reason;
  if (group) {
    // Each child may have died only after its start was announced; none is a null handle.
    for (auto& a : group->actors)
      EXPECT_TRUE(a) << "a started child without an actor";
    caf::scoped_actor self{(*s)->system()};
    // It may have given up already: then its exit reason tells why.
    self->monitor(group->supervisor);
    self->send(group->supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    bool gave_up = false;
    while (!gave_up)
      self->receive(
        [&](const supervisor_event& e) {
          EXPECT_TRUE(e.actor || e.kind == supervisor_event_kind::gave_up ||
                      e.kind == supervisor_event_kind::child_exited)
            << to_string(e.kind) << " of " << e.child << " without an actor";
          gave_up = e.kind == supervisor_event_kind::gave_up;
          reason = e.reason;
        },
        [&](const caf::down_msg& down) {
          gave_up = true;
          reason = render(down.reason);
        },
        caf::after(std::chrono::seconds(20)) >>
          [&] {
            ADD_FAILURE() << "the supervisor kept restarting children that cannot start";
            gave_up = true;
          });
  } else {
    // The supervisor gave up, or (on a loaded machine) the group's wait ended first.
    EXPECT_TRUE(is(group.error(), errc::spawn_failed) || is(group.error(), errc::timeout))
      << render(group.error());
    reason = render(group.error());
  }
  EXPECT_NE(reason.find("learning_rate must be a positive number"), std::string::npos) << reason;
}

} // namespace
} // namespace darcy::ops
