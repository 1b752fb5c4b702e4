#include "tests/support/test_system.hpp"

namespace darcy::test {

caf::behavior test_worker(caf::event_based_actor* self, std::string id) {
  return {
    [id](ping_atom) { return id; },
    [self, id](crash_atom) { self->quit(make_error(errc::injected_fault, id)); },
    [self](stop_atom) { self->quit(); },
  };
}

test_config::test_config(std::string node) : runtime::system_config(std::move(node), 2) {
  add_actor_type("test.worker", test_worker);
}

stop_on_exit::~stop_on_exit() {
  caf::scoped_actor self{sys_};
  self->monitor(actor_);
  self->send_exit(actor_, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {}, caf::after(patience) >> [] {});
}

system_fixture::system_fixture() : sys{cfg}, self{sys} {
  sys.await_actors_before_shutdown(false);
}

} // namespace darcy::test
