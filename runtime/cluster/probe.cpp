#include "runtime/cluster/probe.hpp"

#include <chrono>
#include <memory>

#include "messages/error.hpp"

namespace darcy::runtime {

namespace {

using clock = std::chrono::steady_clock;

struct probe_run {
  caf::actor target;
  probe_spec spec;
  std::string payload;
  caf::response_promise promise;
  clock::time_point begin;
  uint32_t issued = 0;
  uint32_t completed = 0;
  bool failed = false;
  probe_result result;
};

void issue(probe_actor::pointer self, std::shared_ptr<probe_run> run) {
  auto sent = clock::now();
  ++run->issued;
  self->request(run->target, caf::infinite, echo_atom::value, run->payload)
    .then(
      [self, run, sent](const std::string& reply) {
        if (run->failed)
          return;
        auto now = clock::now();
        if (reply.size() != run->payload.size()) {
          run->failed = true;
          run->promise.deliver(make_error(errc::io_error, "echo returned a different payload"));
          return;
        }
        run->result.latencies_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent).count());
        if (++run->completed == run->spec.count) {
          run->result.count = run->completed;
          run->result.seconds = std::chrono::duration<double>(now - run->begin).count();
          run->promise.deliver(std::move(run->result));
        } else if (run->issued < run->spec.count) {
          issue(self, run);
        }
      },
      [run](caf::error& err) {
        if (!run->failed) {
          run->failed = true;
          run->promise.deliver(std::move(err));
        }
      });
}

} // namespace

probe_actor::behavior_type probe_driver(probe_actor::pointer self) {
  return {
    [self](probe_atom, caf::actor target, probe_spec spec) -> caf::result<probe_result> {
      if (!target || spec.count == 0 || spec.window == 0)
        return make_error(errc::invalid_argument, "a probe needs a target, count and window");
      auto run = std::make_shared<probe_run>();
      run->target = std::move(target);
      run->spec = spec;
      run->payload.assign(spec.payload_bytes, 'x');
      run->promise = self->make_response_promise();
      run->result.payload_bytes = spec.payload_bytes;
      run->result.window = spec.window;
      run->result.latencies_ns.reserve(spec.count);
      run->begin = clock::now();
      for (uint32_t i = 0; i < std::min(spec.window, spec.count); ++i)
        issue(self, run);
      return run->promise;
    },
  };
}

} // namespace darcy::runtime
