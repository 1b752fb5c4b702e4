#include "messages/cluster/membership.hpp"
#include "messages/cluster/supervision.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "messages/moe/moe_config.hpp"
#include "messages/serving/serving_values.hpp"
#include "messages/wals/wals_values.hpp"

namespace darcy {

namespace {

template <size_t N>
std::string lookup(const char* const (&names)[N], uint8_t value) {
  return value < N ? names[value] : "unknown";
}

} // namespace

std::string to_string(member_state x) {
  static const char* const names[] = {"up", "down", "left"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(cluster_event_kind x) {
  static const char* const names[] = {"member_up", "member_down", "member_left", "service_up",
                                      "service_down"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(restart_type x) {
  static const char* const names[] = {"permanent", "transient", "temporary"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(restart_strategy x) {
  static const char* const names[] = {"one_for_one", "one_for_all", "rest_for_one"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(supervisor_event_kind x) {
  static const char* const names[] = {"child_started", "child_restarted", "child_exited",
                                      "gave_up"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(init_kind x) {
  static const char* const names[] = {"zeros", "uniform", "normal", "truncated_normal"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(admission_kind x) {
  static const char* const names[] = {"none", "frequency", "bloom"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(eviction_kind x) {
  static const char* const names[] = {"none", "ttl", "lfu", "lru"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(sampler_kind x) {
  static const char* const names[] = {"uniform", "log_uniform", "unigram"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(mask_kind x) {
  static const char* const names[] = {"top_k", "noisy_top_k", "batchwise"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(balance_input x) {
  static const char* const names[] = {"gates", "softmax"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(expert_kind x) {
  static const char* const names[] = {"linear", "ffn"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(wals_weight_fn x) {
  static const char* const names[] = {"identity", "log1p"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(wals_solver x) {
  static const char* const names[] = {"cg", "cholesky"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(wals_side x) {
  static const char* const names[] = {"rows", "cols"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(model_state x) {
  static const char* const names[] = {"unavailable", "loading", "available"};
  return lookup(names, static_cast<uint8_t>(x));
}

std::string to_string(query_kind x) {
  static const char* const names[] = {"vector", "user", "items"};
  return lookup(names, static_cast<uint8_t>(x));
}

} // namespace darcy
