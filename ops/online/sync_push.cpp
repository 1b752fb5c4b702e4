#include "ops/online/sync_push.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/online/sync_message.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/log.hpp"

namespace darcy::ops::online {

namespace {

/// POSTs `body` to the model's :sync; the answer's status, logged when it is not 200.
unsigned post_sync(const push_target& to, const runtime::http_url& url, const std::string& body) {
  auto target = url.target;
  if (!target.ends_with(":sync"))
    target += ":sync";
  auto answer = runtime::http_exchange(
    url.address, runtime::http_request_text(
                   "POST", target, to.token, body,
                   to.mode == push_mode::rows ? "application/octet-stream" : "application/json"));
  auto status = runtime::http_status(answer);
  if (status != 200)
    runtime::log_warn("online: the sync push to {} was answered {}: {}", to.url, status,
                      runtime::http_body(answer));
  return status;
}

/// One push of the links after `cursor`; fills `r`.
void push_rows(const push_target& to, const runtime::http_url& url, const std::string& sync_dir,
               push_cursor& cursor, push_result& r) {
  auto message = read_sync(sync_dir, cursor.rows, cursor.dense, cursor.elided < max_elided_chains);
  if (!message) {
    runtime::log_warn("online: no sync to push from {}: {}", sync_dir, render(message.error()));
    return;
  }
  if (message->rows.empty() && message->dense.empty()) { // it holds all of it already
    r.status = 200;
    return;
  }
  auto body = encode(*message);
  if (!body) {
    runtime::log_warn("online: cannot encode the sync of {}: {}", sync_dir, render(body.error()));
    return;
  }
  r.bytes += part_bytes(*message);
  r.whole_chain = !message->rows.empty() && message->rows.front().manifest.base.empty();
  r.elided_full = carries_elided_full(*message);
  r.status = post_sync(to, url, *body);
  if (r.status != 200)
    return;
  if (r.whole_chain)
    cursor.elided = 0;
  else if (r.elided_full)
    ++cursor.elided;
  if (!message->rows.empty())
    cursor.rows = message->rows.back().manifest.checkpoint;
  if (!message->dense.empty())
    cursor.dense = message->dense.back().manifest.checkpoint;
}

} // namespace

std::string to_string(push_mode m) {
  return m == push_mode::rows ? "rows" : "folder";
}

caf::expected<push_mode> push_mode_named(const std::string& name) {
  if (name == "rows")
    return push_mode::rows;
  if (name == "folder")
    return push_mode::folder;
  return make_error(errc::invalid_config, "'" + name + "' is no sync push mode (rows, folder)");
}

caf::error validate(const push_target& to) {
  if (to.url.empty())
    return {};
  auto url = runtime::parse_http_url(to.url);
  if (!url)
    return make_error(errc::invalid_config, "sync push: " + context_of(url.error()));
  return {};
}

push_result push_sync(const push_target& to, const std::string& sync_dir, push_cursor& cursor) {
  push_result r;
  auto url = runtime::parse_http_url(to.url);
  if (!url)
    return r;
  if (to.mode == push_mode::folder) {
    auto body = nlohmann::json{{"dir", std::filesystem::absolute(sync_dir).string()}}.dump();
    r.status = post_sync(to, *url, body);
    return r;
  }
  push_rows(to, *url, sync_dir, cursor, r);
  if (r.status == 409 && !r.whole_chain) { // the model holds another link: restore it whole
    cursor = {};
    push_rows(to, *url, sync_dir, cursor, r);
  }
  return r;
}

} // namespace darcy::ops::online
