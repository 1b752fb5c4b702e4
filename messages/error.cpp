#include "messages/error.hpp"

#include <caf/deep_to_string.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace darcy {

namespace {

std::string context_text(const caf::message& context) {
  if (context.empty())
    return {};
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return caf::deep_to_string(context);
}

} // namespace

caf::error make_error(errc x) {
  return caf::error{static_cast<uint8_t>(x), errc_category};
}

caf::error make_error(const plain_error& x) {
  if (!x)
    return {};
  return x.context.empty() ? make_error(x.code) : make_error(x.code, x.context);
}

caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<uint8_t>(x), errc_category, caf::make_message(std::move(context))};
}

caf::error with_step(const std::string& step, const caf::error& err) {
  if (err.category() == errc_category)
    return make_error(static_cast<errc>(err.code()), step + ": " + context_of(err));
  return make_error(errc::unavailable, step + ": " + render(err));
}

std::string render_errc(uint8_t code, const caf::message& context) {
  std::string result = detail::errc_entry_of(code).text;
  auto ctx = context_text(context);
  if (!ctx.empty()) {
    result += ": ";
    result += ctx;
  }
  return result;
}

std::string context_of(const caf::error& x) {
  return context_text(x.context());
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

plain_error to_plain(const caf::error& x) {
  if (!x)
    return {};
  if (x.category() == errc_category)
    return {static_cast<errc>(x.code()), context_of(x)};
  if (x == caf::sec::request_timeout)
    return {errc::deadline_exceeded, render(x)};
  if (x == caf::sec::request_receiver_down || x == caf::sec::no_route_to_receiving_node ||
      x == caf::sec::cannot_connect_to_node)
    return {errc::unavailable, render(x)};
  return {errc::io_error, render(x)};
}

bool is(const caf::error& x, errc code) {
  // CAF 0.17's category() of an empty error reads a null pointer.
  return x && x.category() == errc_category && x.code() == static_cast<uint8_t>(code);
}

} // namespace darcy
