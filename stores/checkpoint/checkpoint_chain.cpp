#include "stores/checkpoint/checkpoint_chain.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "messages/error.hpp"

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

/// Whether every part of every link of `chain` is under `root` at its size.
bool whole(const checkpoint_dir& root, const std::vector<checkpoint_manifest>& chain) {
  auto here = [&](const file_info& f) {
    std::error_code ec;
    return std::filesystem::file_size(std::filesystem::path{root.root()} / f.path, ec) == f.bytes &&
           !ec;
  };
  for (auto& link : chain) {
    for (auto& entry : link.embeddings)
      for (auto& f : entry.files)
        if (!here(f))
          return false;
    for (auto& f : link.parts)
      if (!here(f))
        return false;
  }
  return true;
}

} // namespace

caf::expected<checkpoint_manifest> newest_whole_checkpoint(const checkpoint_dir& root) {
  std::vector<std::string> ids;
  if (auto current = root.read_manifest())
    ids.push_back(current->checkpoint);
  for (auto& id : root.checkpoints())
    ids.push_back(id);
  for (auto& id : ids) {
    auto m = root.read_manifest_of(id);
    if (!m)
      continue;
    if (auto chain = read_chain(root, *m); chain && whole(root, *chain))
      return std::move(*m);
  }
  return make_error(errc::not_found,
                    root.root() + ": no checkpoint there has every part of its chain");
}

caf::error make_current(const checkpoint_dir& root, const std::string& id) {
  auto current = root.read_manifest();
  if (current && current->checkpoint == id)
    return {};
  auto now = current ? "; the current one is " + current->checkpoint : std::string{};
  auto m = root.read_manifest_of(id);
  if (!m)
    return make_error(errc::not_found, root.root() + " no longer holds checkpoint " + id + now);
  if (auto chain = read_chain(root, *m); !chain || !whole(root, *chain))
    return make_error(errc::not_found,
                      root.root() + " no longer holds the whole chain of checkpoint " + id + now);
  return root.commit(*m, root.checkpoints().size() + 1);
}

} // namespace darcy::stores
