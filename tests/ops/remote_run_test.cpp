// ops::remote_run: a model author's call of a service registered in the cluster, with the
// request's deadline; each way it can end maps to the error runtime::remote_run promises.
#include "ops/remote_run.hpp"

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <caf/event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::ops {
namespace {

using namespace std::chrono_literals;

/// Answers (ping, x) with 2x; (echo, x) with a darcy error when x is negative; never answers
/// (probe, x).
caf::behavior doubling_service(caf::event_based_actor* self) {
  auto held = std::make_shared<std::vector<caf::response_promise>>();
  return {
    [](ping_atom, int32_t x) { return 2 * x; },
    [](echo_atom, int32_t x) -> caf::result<int32_t> {
      if (x < 0)
        return make_error(errc::invalid_argument, "negative");
      return x;
    },
    [self, held](probe_atom, int32_t) -> caf::result<int32_t> {
      held->push_back(self->make_response_promise());
      return held->back();
    },
  };
}

TEST(remote_run, each_ending_of_a_call_is_the_error_its_contract_names) {
  auto opened = session::open({});
  ASSERT_TRUE(opened) << render(opened.error());
  auto& s = **opened;
  auto service = s.system().spawn(doubling_service);
  auto gone = s.system().spawn(doubling_service);
  for (auto [name, actor] : {std::pair{"test.double", service}, std::pair{"test.gone", gone}})
    ASSERT_TRUE(runtime::ask<ok_atom>(s.system(), s.registry(), test::patience,
                                      register_atom::value, service_info{name, "local", actor}));
  caf::anon_send_exit(gone, caf::exit_reason::kill);
  {
    caf::scoped_actor self{s.system()};
    self->wait_for(gone);
  }
  auto soon = [](std::chrono::milliseconds ms) {
    request_context ctx;
    ctx.deadline_us = deadline_in(ms);
    return ctx;
  };
  request_context passed;
  passed.deadline_us = deadline_in(0ms) - 1000;

  auto answered = remote_run<int32_t>(s, "test.double", {}, ping_atom::value, int32_t{21});
  ASSERT_TRUE(answered) << render(answered.error());
  EXPECT_EQ(*answered, 42);

  struct failing_case {
    const char* what;
    caf::expected<int32_t> result;
    errc code;
    const char* mentions;
  };
  std::vector<failing_case> cases;
  cases.push_back({"a service nobody registered",
                   remote_run<int32_t>(s, "test.nobody", {}, ping_atom::value, int32_t{1}),
                   errc::unavailable, "test.nobody is not registered"});
  cases.push_back({"the service's own error passes unchanged",
                   remote_run<int32_t>(s, "test.double", {}, echo_atom::value, int32_t{-1}),
                   errc::invalid_argument, "negative"});
  cases.push_back({"a service that never answers, past the deadline",
                   remote_run<int32_t>(s, "test.double", soon(50ms), probe_atom::value, int32_t{1}),
                   errc::deadline_exceeded, "test.double"});
  cases.push_back({"a deadline already passed sends nothing",
                   remote_run<int32_t>(s, "test.double", passed, ping_atom::value, int32_t{1}),
                   errc::deadline_exceeded, "test.double"});
  cases.push_back({"a registered service that is gone",
                   remote_run<int32_t>(s, "test.gone", soon(10s), ping_atom::value, int32_t{1}),
                   errc::unavailable, ""});
  for (auto& c : cases) {
    ASSERT_FALSE(c.result) << c.what;
    auto err = c.result.error();
    // The registry may already have dropped the gone service: unavailable either way.
    EXPECT_TRUE(is(err, c.code)) << c.what << ": " << render(err);
    EXPECT_NE(render(err).find(c.mentions), std::string::npos) << c.what << ": " << render(err);
  }
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
}

} // namespace
} // namespace darcy::ops
