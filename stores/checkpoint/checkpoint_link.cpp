#include "stores/checkpoint/checkpoint_link.hpp"

#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

namespace {

/// errc::invalid_argument unless `path` is ID/NAME/.../NAME, every NAME a plain file name.
caf::error check_part_path(const std::string& id, const std::string& path) {
  if (path.size() <= id.size() + 1 || path.compare(0, id.size(), id) != 0 || path[id.size()] != '/')
    return make_error(errc::invalid_argument,
                      "a checkpoint link's part lies outside its checkpoint " + id);
  std::string_view rest{path};
  rest.remove_prefix(id.size() + 1);
  for (;;) {
    auto slash = rest.find('/');
    if (auto err = check_checkpoint_name(rest.substr(0, slash)))
      return err;
    if (slash == std::string_view::npos)
      return {};
    rest.remove_prefix(slash + 1);
  }
}

} // namespace

std::vector<file_info> part_files(const checkpoint_manifest& m) {
  std::vector<file_info> out;
  for (auto& e : m.embeddings)
    out.insert(out.end(), e.files.begin(), e.files.end());
  out.insert(out.end(), m.parts.begin(), m.parts.end());
  return out;
}

caf::expected<checkpoint_link> read_link(const checkpoint_dir& root,
                                         const checkpoint_manifest& manifest) {
  checkpoint_link link{manifest, {}};
  for (auto& part : part_files(manifest)) {
    auto bytes = root.read_part(part);
    if (!bytes)
      return std::move(bytes.error());
    link.parts.push_back(std::move(*bytes));
  }
  return link;
}

caf::error check_link(const checkpoint_link& link) {
  auto& m = link.manifest;
  if (auto err = check_checkpoint_name(m.checkpoint))
    return err;
  auto files = part_files(m);
  if (files.size() != link.parts.size())
    return make_error(errc::corrupt_file,
                      "checkpoint link " + m.checkpoint + ": " + std::to_string(link.parts.size()) +
                        " parts for a manifest that names " + std::to_string(files.size()));
  for (size_t i = 0; i < files.size(); ++i) {
    if (auto err = check_part_path(m.checkpoint, files[i].path))
      return err;
    auto& bytes = link.parts[i];
    if (bytes.size() != files[i].bytes || compute::hash_key(bytes) != files[i].checksum)
      return make_error(errc::corrupt_file, "checkpoint link " + m.checkpoint + ": part " +
                                              files[i].path +
                                              " does not match the size or checksum its "
                                              "manifest names");
  }
  return {};
}

caf::error install_link(const checkpoint_dir& root, const checkpoint_link& link, size_t keep) {
  if (auto err = check_link(link))
    return err;
  if (auto err = root.prepare())
    return err;
  auto& m = link.manifest;
  auto files = part_files(m);
  for (size_t i = 0; i < files.size(); ++i)
    if (auto written = root.write_part(files[i].path, link.parts[i], files[i].rows); !written) {
      root.discard(m.checkpoint);
      return std::move(written.error());
    }
  return root.commit(m, keep);
}

} // namespace darcy::stores
