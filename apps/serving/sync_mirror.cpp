#include "apps/serving/sync_mirror.hpp"

#include <atomic>
#include <filesystem>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/estimator/export/export.hpp"
#include "stores/checkpoint/checkpoint_link.hpp"

namespace darcy::serving {

namespace fs = std::filesystem;

namespace {

caf::error layout_refusal(const std::string& what) {
  return make_error(errc::invalid_argument, "a sync of another model or table layout: " + what);
}

} // namespace

caf::expected<sync_body> parse_sync_body(const std::string& body) {
  sync_body out;
  if (ops::online::is_sync_message(body)) {
    auto decoded = ops::online::decode_sync_message(body);
    if (!decoded)
      return make_error(errc::invalid_argument, context_of(decoded.error()));
    out.message = std::move(*decoded);
    return out;
  }
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("dir") || !j["dir"].is_string())
    return make_error(errc::invalid_argument,
                      "a sync body is {\"dir\": \"SYNC_DIR\"} or a sync message");
  out.dir = j["dir"].get<std::string>();
  return out;
}

sync_mirror::sync_mirror(std::string dir, std::string dense_service)
  : dir_(std::move(dir)),
    dense_service_(dense_service.empty() ? std::string{ops::estimator::dense_sync_service}
                                         : std::move(dense_service)) {
}

sync_mirror::~sync_mirror() {
  if (!owned_)
    return;
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

caf::error sync_mirror::check(const ops::online::sync_message& m, const std::string& held,
                              const std::vector<de_config>& tables) const {
  for (auto& link : m.rows) {
    auto& manifest = link.manifest;
    if (!manifest.service.empty() && manifest.service != embedding_service_name)
      return layout_refusal("checkpoint " + manifest.checkpoint + " is of service '" +
                            manifest.service + "', not of the embedding tables");
    for (auto& e : manifest.embeddings) {
      auto same = std::find_if(tables.begin(), tables.end(),
                               [&](const de_config& t) { return t.name == e.config.name; });
      if (same == tables.end())
        return layout_refusal("table '" + e.config.name + "' is not one of the model's");
      if (same->dim != e.config.dim)
        return layout_refusal("table '" + e.config.name + "' has dimension " +
                              std::to_string(e.config.dim) + ", the model's " +
                              std::to_string(same->dim));
    }
  }
  for (auto& link : m.dense)
    if (link.manifest.service != dense_service_)
      return layout_refusal("dense checkpoint " + link.manifest.checkpoint + " is of service '" +
                            link.manifest.service + "'");
  if (m.dense.size() > 1)
    return make_error(errc::invalid_argument, "a sync carries at most one dense sync");
  for (auto* links : {&m.rows, &m.dense})
    for (auto& link : *links)
      if (auto err = stores::check_link(link))
        return err;
  for (size_t i = 1; i < m.rows.size(); ++i)
    if (m.rows[i].manifest.base != m.rows[i - 1].manifest.checkpoint)
      return make_error(errc::corrupt_file,
                        "a sync whose links do not chain: " + m.rows[i].manifest.checkpoint +
                          " does not apply on " + m.rows[i - 1].manifest.checkpoint);
  if (m.rows.empty() || m.rows.front().manifest.base.empty())
    return {};
  auto& first = m.rows.front().manifest;
  if (m.rows.size() == 1 && first.checkpoint == held)
    return {}; // a repeat of the last one: installed again, applied never
  bool here = !dir_.empty() && [&] {
    auto mirrored = stores::checkpoint_dir{dir_}.read_manifest();
    return mirrored && mirrored->checkpoint == held;
  }();
  if (first.base != held || !here)
    return make_error(errc::out_of_order, "delta " + first.checkpoint + " applies on " +
                                            first.base + ", and this copy holds " +
                                            (held.empty() ? "no link" : held) +
                                            (here || held.empty() ? "" : " (not in its folder)") +
                                            ": send the chain from its full checkpoint");
  return {};
}

caf::error sync_mirror::install(const ops::online::sync_message& m, const std::string& held,
                                const std::vector<de_config>& tables) {
  if (auto err = check(m, held, tables))
    return err;
  if (m.rows.empty() && m.dense.empty())
    return {};
  if (dir_.empty()) {
    static std::atomic<uint64_t> counter{0};
    dir_ = (fs::temp_directory_path() /
            ("darcy-serve-sync-" + std::to_string(::getpid()) + "-" + std::to_string(++counter)))
             .string();
    owned_ = true;
  }
  // A copy: what a crash loses, the next push's whole chain brings again.
  stores::checkpoint_dir rows{dir_, false}, dense{dir_ + "/dense", false};
  for (auto& link : m.rows)
    if (auto err = stores::install_link(rows, link, 1))
      return err;
  for (auto& link : m.dense)
    if (auto err = stores::install_link(dense, link, 2))
      return err;
  return {};
}

} // namespace darcy::serving
