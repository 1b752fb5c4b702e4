#include "apps/serving/predict_envelope.hpp"

#include "messages/error.hpp"

namespace darcy::serving {

caf::expected<predict_envelope> parse_predict_envelope(const std::string& body,
                                                       uint32_t max_deadline_ms) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("instances") || !j["instances"].is_array())
    return make_error(errc::invalid_argument, "a predict body is {\"instances\": [{...}, ...]}");
  predict_envelope out;
  for (auto& [key, value] : j.items()) {
    if (key == "deadline_ms") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() == 0 ||
          value.get<uint64_t>() > max_deadline_ms)
        return make_error(errc::invalid_argument, "deadline_ms must be an integer in [1, " +
                                                    std::to_string(max_deadline_ms) + "]");
      out.deadline_ms = value.get<uint32_t>();
    } else if (key == "allow_partial") {
      if (!value.is_boolean())
        return make_error(errc::invalid_argument, "allow_partial must be true or false");
      out.allow_partial = value.get<bool>();
    } else if (key != "instances") {
      return make_error(
        errc::invalid_argument,
        "unknown field '" + key + "' of a predict body (instances, deadline_ms, allow_partial)");
    }
  }
  auto& instances = j["instances"];
  if (instances.empty())
    return make_error(errc::empty_batch, "a predict request needs at least one instance");
  if (instances.size() > max_predict_instances)
    return make_error(errc::batch_too_large, std::to_string(instances.size()) +
                                               " instances, at most " +
                                               std::to_string(max_predict_instances));
  out.instances = std::move(instances);
  return out;
}

} // namespace darcy::serving
