#include "messages/errc.hpp"

#include <caf/deep_to_string.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace darcy {

namespace {

struct errc_entry {
  const char* id;
  const char* text;
};

// Indexed by the enum value; index 0 is CAF's "no error".
constexpr errc_entry errc_table[] = {
  {"none", "no error"},
  {"invalid_argument", "invalid argument"},
  {"invalid_config", "invalid configuration"},
  {"unknown_service", "unknown service"},
  {"unknown_node", "unknown node"},
  {"duplicate_node", "node name already in use"},
  {"node_unreachable", "node unreachable"},
  {"no_live_node", "no live node to place the child on"},
  {"spawn_failed", "spawn failed"},
  {"restart_intensity_exceeded", "restart intensity exceeded"},
  {"timeout", "timed out"},
  {"io_error", "I/O error"},
  {"not_found", "not found"},
  {"read_only", "refused in read-only mode"},
  {"dimension_mismatch", "dimension mismatch"},
  {"non_finite", "NaN or Inf value"},
  {"batch_too_large", "batch over the configured limit"},
  {"empty_batch", "empty batch"},
  {"unknown_embedding", "unknown embedding"},
  {"corrupt_file", "truncated or corrupt file"},
  {"unsupported", "unsupported"},
  {"injected_fault", "injected fault"},
  {"overloaded", "service overloaded, retry later"},
};

constexpr size_t errc_count = sizeof(errc_table) / sizeof(errc_table[0]);

const errc_entry& entry(uint8_t code) {
  static constexpr errc_entry unknown{"unknown", "unknown darcy error"};
  return code < errc_count ? errc_table[code] : unknown;
}

std::string context_text(const caf::message& context) {
  if (context.empty())
    return {};
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return caf::deep_to_string(context);
}

} // namespace

std::string to_string(errc x) {
  return entry(static_cast<uint8_t>(x)).id;
}

const char* describe(errc x) {
  return entry(static_cast<uint8_t>(x)).text;
}

caf::error make_error(errc x) {
  return caf::error{static_cast<uint8_t>(x), errc_category};
}

caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<uint8_t>(x), errc_category,
                    caf::make_message(std::move(context))};
}

std::string render_errc(uint8_t code, const caf::message& context) {
  std::string result = entry(code).text;
  auto ctx = context_text(context);
  if (!ctx.empty()) {
    result += ": ";
    result += ctx;
  }
  return result;
}

std::string render(const caf::error& x) {
  if (!x)
    return "no error";
  if (x.category() == errc_category)
    return render_errc(x.code(), x.context());
  if (x.category() == caf::atom("system")) {
    auto result = caf::to_string(static_cast<caf::sec>(x.code()));
    auto ctx = context_text(x.context());
    return ctx.empty() ? result : result + ": " + ctx;
  }
  return caf::to_string(x);
}

bool is(const caf::error& x, errc code) {
  return x.category() == errc_category && x.code() == static_cast<uint8_t>(code);
}

} // namespace darcy
