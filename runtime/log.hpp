// The one logger of every Darcy process: levelled, one line per event, on stderr. Actors and
// nodes log through it instead of writing to std::cerr, so that `--log-level` (or
// set_log_level) silences them or shows more. Messages use fmt's format syntax.
//
//   runtime::log_warn("wals chief: {}", render(err));
//   runtime::set_log_level("debug");
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace darcy::runtime {

/// The level names set_log_level takes, least to most severe, then "off".
const std::vector<std::string>& log_level_names();

/// The default level of a process that sets none.
inline constexpr std::string_view default_log_level = "info";

/// Sets the level of every later message; false (and nothing changed) for an unknown name.
bool set_log_level(std::string_view name);

/// The process's logger ("darcy", to stderr).
spdlog::logger& logger();

template <class... Ts>
void log_debug(spdlog::format_string_t<Ts...> fmt, Ts&&... xs) {
  logger().debug(fmt, std::forward<Ts>(xs)...);
}

template <class... Ts>
void log_info(spdlog::format_string_t<Ts...> fmt, Ts&&... xs) {
  logger().info(fmt, std::forward<Ts>(xs)...);
}

template <class... Ts>
void log_warn(spdlog::format_string_t<Ts...> fmt, Ts&&... xs) {
  logger().warn(fmt, std::forward<Ts>(xs)...);
}

template <class... Ts>
void log_error(spdlog::format_string_t<Ts...> fmt, Ts&&... xs) {
  logger().error(fmt, std::forward<Ts>(xs)...);
}

} // namespace darcy::runtime
