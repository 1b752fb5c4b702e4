#include "stores/checkpoint/checkpoint_chain.hpp"

#include <algorithm>
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

} // namespace darcy::stores
