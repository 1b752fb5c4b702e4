// A model `darcy serve` answers :predict and :sync for in this process, whatever trained it:
// an Estimator export (estimator_model.hpp) or a PyTorch export (torch_model.hpp).
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "actors/serving/access_policy.hpp"

namespace darcy::serving {

class served_model {
public:
  virtual ~served_model() = default;

  /// The JSON answer to a predict request of ctx.principal for model `name`; thread-safe.
  virtual caf::expected<std::string> predict(const std::string& name, const std::string& body,
                                             const request_context& ctx,
                                             uint32_t max_deadline_ms) = 0;

  /// The JSON answer to a sync request of ctx.principal; thread-safe.
  virtual caf::expected<std::string> sync(const std::string& name, const std::string& body,
                                          const request_context& ctx) = 0;

  /// {"name", "kind", "version", ...}.
  virtual std::string describe(const std::string& name) const = 0;
};

} // namespace darcy::serving
