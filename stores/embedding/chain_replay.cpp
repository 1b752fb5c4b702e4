#include "stores/embedding/chain_replay.hpp"

#include <algorithm>
#include <unordered_map>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/embedding/embedding_part.hpp"

namespace darcy::stores {

caf::expected<link_changes> read_link(const std::string& dir, const checkpoint_manifest& link,
                                      const std::string& name, uint32_t index, uint32_t count) {
  if (count == 0 || index >= count)
    return make_error(errc::invalid_argument,
                      "shard " + std::to_string(index) + " of " + std::to_string(count));
  link_changes out;
  auto entry = std::find_if(link.embeddings.begin(), link.embeddings.end(),
                            [&](const checkpoint_embedding& e) { return e.config.name == name; });
  if (entry == link.embeddings.end())
    return out;
  out.present = true;
  out.config = entry->config;
  auto mine = [&](std::string_view key) { return compute::shard_of_key(key, count) == index; };
  for (size_t part = 0; part < entry->files.size(); ++part) {
    auto delta = read_shard_part(
      dir, entry->files[part], entry->config,
      [&](const row_record& r) -> caf::error {
        if (mine(r.key))
          out.rows.push_back({std::string{r.key},
                              {r.values.begin(), r.values.end()},
                              {r.slots.begin(), r.slots.end()},
                              r.frequency,
                              r.updates,
                              r.last_update});
        return {};
      },
      [&](std::string_view key) -> caf::error {
        if (mine(key))
          out.deleted.emplace_back(key);
        return {};
      });
    if (!delta)
      return std::move(delta.error());
    if (!*delta)
      out.whole_parts.push_back(static_cast<uint32_t>(part));
  }
  return out;
}

caf::error replay_chain(const std::string& dir, const std::vector<checkpoint_manifest>& chain,
                        const std::string& name, uint32_t index, uint32_t count,
                        const std::function<caf::error(const row_record&)>& f) {
  std::vector<std::pair<const checkpoint_manifest*, link_changes>> links;
  for (auto& link : chain) {
    auto changes = read_link(dir, link, name, index, count);
    if (!changes)
      return std::move(changes.error());
    links.emplace_back(&link, std::move(*changes));
  }
  std::unordered_map<std::string, stored_row> rows;
  for (auto& [link, changes] : links) {
    for (auto part : changes.whole_parts)
      if (link->shard_count > 0)
        std::erase_if(rows, [&](const auto& kv) {
          return compute::shard_of_key(kv.first, link->shard_count) == part;
        });
    for (auto& row : changes.rows) {
      auto key = row.key;
      rows.insert_or_assign(std::move(key), std::move(row));
    }
    for (auto& key : changes.deleted)
      rows.erase(key);
  }
  for (auto& [key, row] : rows)
    if (auto err = f(row.record()))
      return err;
  return {};
}

} // namespace darcy::stores
