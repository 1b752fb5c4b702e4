#include "ops/online/sync_message.hpp"

#include <algorithm>
#include <filesystem>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"

namespace darcy::ops::online {

namespace {

constexpr std::string_view magic = "DARCY-SYNC-1\n";
/// checkpoint_manifest::same_as of a full checkpoint sent as an empty delta (read_sync's
/// elide_full): no checkpoint has this name.
constexpr const char* elided_marker = "(elided full checkpoint)";

} // namespace

bool is_sync_message(std::string_view body) {
  return body.starts_with(magic);
}

caf::expected<std::string> encode(const sync_message& m) {
  std::vector<char> bytes{magic.begin(), magic.end()};
  caf::binary_serializer sink{nullptr, bytes};
  auto copy = m;
  if (auto err = sink(copy))
    return err;
  return std::string{bytes.begin(), bytes.end()};
}

caf::expected<sync_message> decode_sync_message(std::string_view bytes) {
  if (!is_sync_message(bytes))
    return make_error(errc::corrupt_file, "not a sync message");
  bytes.remove_prefix(magic.size());
  caf::binary_deserializer source{nullptr, bytes.data(), bytes.size()};
  sync_message m;
  if (auto err = source(m))
    return make_error(errc::corrupt_file, "a truncated or damaged sync message: " + render(err));
  if (source.remaining() != 0)
    return make_error(errc::corrupt_file, "a sync message followed by " +
                                            std::to_string(source.remaining()) + " more bytes");
  return m;
}

caf::expected<sync_message> read_sync(const std::string& sync_dir, const std::string& held_rows,
                                      const std::string& held_dense, bool elide_full) {
  sync_message m;
  stores::checkpoint_dir rows{sync_dir};
  auto head = rows.read_manifest();
  if (!head)
    return std::move(head.error());
  if (head->checkpoint != held_rows) {
    auto chain = stores::read_chain(rows, *head);
    if (!chain)
      return std::move(chain.error());
    auto held = std::find_if(chain->begin(), chain->end(), [&](const checkpoint_manifest& c) {
      return c.checkpoint == held_rows;
    });
    auto from = held == chain->end() ? chain->begin() : held + 1;
    auto send = [&](const checkpoint_manifest& manifest) -> caf::error {
      auto link = stores::read_link(rows, manifest);
      if (!link)
        return std::move(link.error());
      m.rows.push_back(std::move(*link));
      return {};
    };
    if (elide_full && from == chain->begin() && !held_rows.empty() &&
        !chain->front().same_as.empty()) {
      // The previous chain's links after the one held, up to the state the new one starts at.
      auto last = rows.read_manifest_of(chain->front().same_as);
      auto previous = last ? stores::read_chain(rows, *last)
                           : caf::expected<std::vector<checkpoint_manifest>>{last.error()};
      auto at = previous ? std::find_if(previous->begin(), previous->end(),
                                        [&](auto& c) { return c.checkpoint == held_rows; })
                         : std::vector<checkpoint_manifest>::iterator{};
      if (previous && at != previous->end()) {
        for (auto it = at + 1; it != previous->end(); ++it)
          if (auto err = send(*it))
            return err;
        auto empty = chain->front();
        empty.base = empty.same_as;
        empty.same_as = elided_marker;
        empty.embeddings.clear();
        empty.parts.clear();
        m.rows.push_back({std::move(empty), {}});
        ++from;
      }
    }
    for (auto it = from; it != chain->end(); ++it)
      if (auto err = send(*it))
        return err;
  }
  stores::checkpoint_dir dense{sync_dir + "/dense"};
  if (!std::filesystem::exists(dense.root()))
    return m;
  auto dense_head = dense.read_manifest();
  if (!dense_head)
    return is(dense_head.error(), errc::not_found) ? caf::expected<sync_message>{std::move(m)}
                                                   : std::move(dense_head.error());
  if (dense_head->checkpoint != held_dense) {
    auto link = stores::read_link(dense, *dense_head);
    if (!link)
      return std::move(link.error());
    m.dense.push_back(std::move(*link));
  }
  return m;
}

bool carries_elided_full(const sync_message& m) {
  return std::any_of(m.rows.begin(), m.rows.end(),
                     [](auto& link) { return link.manifest.same_as == elided_marker; });
}

uint64_t part_bytes(const sync_message& m) {
  uint64_t total = 0;
  for (auto* links : {&m.rows, &m.dense})
    for (auto& link : *links)
      for (auto& part : link.parts)
        total += part.size();
  return total;
}

} // namespace darcy::ops::online
