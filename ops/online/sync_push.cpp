#include "ops/online/sync_push.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/log.hpp"

namespace darcy::ops::online {

caf::error validate(const push_target& to) {
  if (to.url.empty())
    return {};
  auto url = runtime::parse_http_url(to.url);
  if (!url)
    return make_error(errc::invalid_config, "sync push: " + context_of(url.error()));
  return {};
}

unsigned push_sync(const push_target& to, const std::string& sync_dir) {
  auto url = runtime::parse_http_url(to.url);
  if (!url)
    return 0;
  auto body = nlohmann::json{{"dir", std::filesystem::absolute(sync_dir).string()}}.dump();
  auto target = url->target;
  if (!target.ends_with(":sync"))
    target += ":sync";
  auto answer = runtime::http_exchange(url->address,
                                       runtime::http_request_text("POST", target, to.token, body));
  auto status = runtime::http_status(answer);
  if (status != 200)
    runtime::log_warn("online: the sync push to {} was answered {}: {}", to.url, status,
                      runtime::http_body(answer));
  return status;
}

} // namespace darcy::ops::online
