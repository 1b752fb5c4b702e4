#include "runtime/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace darcy::runtime {

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  auto result =
    std::make_shared<spdlog::logger>("darcy", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  result->set_pattern("darcy [%l] %v");
  result->set_level(spdlog::level::from_str(std::string{default_log_level}));
  result->flush_on(spdlog::level::trace);
  return result;
}

} // namespace

const std::vector<std::string>& log_level_names() {
  static const std::vector<std::string> names{"trace", "debug", "info", "warn", "error", "off"};
  return names;
}

bool set_log_level(std::string_view name) {
  auto& names = log_level_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    return false;
  logger().set_level(spdlog::level::from_str(std::string{name}));
  return true;
}

spdlog::logger& logger() {
  static auto instance = make_logger();
  return *instance;
}

} // namespace darcy::runtime
