#include "stores/checkpoint/checkpoint_chain.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"

namespace darcy::stores {

caf::expected<std::vector<checkpoint_manifest>> read_chain(const checkpoint_dir& root,
                                                           checkpoint_manifest head) {
  std::vector<checkpoint_manifest> chain{std::move(head)};
  std::set<std::string> seen{chain.back().checkpoint};
  while (!chain.back().base.empty()) {
    auto base = chain.back().base;
    if (!seen.insert(base).second)
      return make_error(errc::corrupt_file, root.root() + ": the chain of checkpoint " +
                                              chain.front().checkpoint + " loops at " + base);
    auto m = root.read_manifest_of(base);
    if (!m)
      return make_error(errc::corrupt_file, root.root() + ": checkpoint " +
                                              chain.back().checkpoint + " applies on " + base +
                                              ", which cannot be read: " + render(m.error()));
    chain.push_back(std::move(*m));
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

namespace {

struct owned_row {
  std::vector<float> values, slots;
  uint64_t frequency = 0, updates = 0;
  int64_t last_update = 0;
};

} // namespace

caf::error replay_chain(const std::string& dir, const std::vector<checkpoint_manifest>& chain,
                        const std::string& name, uint32_t index, uint32_t count,
                        const std::function<caf::error(const row_record&)>& f) {
  if (count == 0 || index >= count)
    return make_error(errc::invalid_argument,
                      "shard " + std::to_string(index) + " of " + std::to_string(count));
  std::unordered_map<std::string, owned_row> rows;
  auto mine = [&](std::string_view key) { return compute::shard_of_key(key, count) == index; };
  for (auto& link : chain) {
    auto entry = std::find_if(link.embeddings.begin(), link.embeddings.end(),
                              [&](const checkpoint_embedding& e) { return e.config.name == name; });
    if (entry == link.embeddings.end())
      continue;
    for (size_t part = 0; part < entry->files.size(); ++part) {
      auto& file = entry->files[part];
      std::vector<std::pair<std::string, owned_row>> changed;
      std::vector<std::string> deleted;
      auto delta = read_shard_part(
        dir, file, entry->config,
        [&](const row_record& r) -> caf::error {
          if (mine(r.key))
            changed.emplace_back(std::string{r.key}, owned_row{{r.values.begin(), r.values.end()},
                                                               {r.slots.begin(), r.slots.end()},
                                                               r.frequency,
                                                               r.updates,
                                                               r.last_update});
          return {};
        },
        [&](std::string_view key) -> caf::error {
          if (mine(key))
            deleted.emplace_back(key);
          return {};
        });
      if (!delta)
        return std::move(delta.error());
      // A whole part replaces what its shard held: the rows of that shard of the link's
      // shard count.
      if (!*delta && link.shard_count > 0)
        std::erase_if(rows, [&](const auto& kv) {
          return compute::shard_of_key(kv.first, link.shard_count) == part;
        });
      for (auto& [key, row] : changed)
        rows.insert_or_assign(std::move(key), std::move(row));
      for (auto& key : deleted)
        rows.erase(key);
    }
  }
  for (auto& [key, row] : rows)
    if (auto err = f({key, row.values, row.slots, row.frequency, row.updates, row.last_update}))
      return err;
  return {};
}

} // namespace darcy::stores
