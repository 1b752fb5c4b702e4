#include "runtime/cluster/exit_cascade.hpp"

#include <caf/attachable.hpp>
#include <caf/exit_reason.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/system_messages.hpp>

namespace darcy::runtime {

namespace {

class exit_cascade : public caf::attachable {
public:
  explicit exit_cascade(std::function<std::vector<caf::actor>()> targets)
    : targets_(std::move(targets)) {}

  void actor_exited(const caf::error&, caf::execution_unit* host) override {
    for (auto& target : targets_())
      if (target)
        target->enqueue(
          nullptr, caf::make_message_id(),
          caf::make_message(caf::exit_msg{target.address(), caf::exit_reason::user_shutdown}),
          host);
  }

private:
  std::function<std::vector<caf::actor>()> targets_;
};

} // namespace

void stop_on_exit(caf::abstract_actor& owner, std::function<std::vector<caf::actor>()> targets) {
  owner.attach(caf::attachable_ptr{new exit_cascade(std::move(targets))});
}

} // namespace darcy::runtime
