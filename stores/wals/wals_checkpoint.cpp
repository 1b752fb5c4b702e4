#include "stores/wals/wals_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Format 1: root/chief.state ("run_id N", "sweep S", "losses L0 L1 ...") names sweep S, whose
// factor files lie in root/sweep-S/ without checksums in any manifest.
caf::expected<checkpoint_manifest> read_format_1(const checkpoint_dir& root) {
  auto state_path = (fs::path{root.root()} / "chief.state").string();
  auto text = base::read_file(state_path);
  if (!text)
    return std::move(text.error());
  checkpoint_manifest m;
  m.service = wals_service_name;
  std::istringstream in{*text};
  std::string key;
  bool has_run = false;
  bool has_sweep = false;
  while (in >> key) {
    if (key == "run_id") {
      has_run = static_cast<bool>(in >> m.wals.run_id);
    } else if (key == "sweep") {
      has_sweep = static_cast<bool>(in >> m.step);
    } else if (key == "losses") {
      std::string rest;
      std::getline(in, rest);
      std::istringstream values{rest};
      double l;
      while (values >> l)
        m.wals.losses.push_back(l);
    }
  }
  if (!has_run || !has_sweep || m.step < 0)
    return make_error(errc::corrupt_file, state_path + ": no run_id or sweep");
  auto sweep_dir = "sweep-" + std::to_string(m.step);
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(fs::path{root.root()} / sweep_dir, ec))
    m.parts.push_back({sweep_dir + "/" + entry.path().filename().string(), 0, 0, 0});
  std::sort(m.parts.begin(), m.parts.end(),
            [](const file_info& a, const file_info& b) { return a.path < b.path; });
  return m;
}

} // namespace

std::string factor_part_name(wals_side side, uint32_t index, uint32_t count) {
  return to_string(side) + "-" + std::to_string(index) + "-of-" + std::to_string(count) + ".f32";
}

caf::expected<file_info> write_factor_part(const checkpoint_dir& root, const std::string& id,
                                           wals_side side, uint32_t index, uint32_t count,
                                           const float_matrix& m) {
  return root.write_part(id + "/" + factor_part_name(side, index, count), encode_matrix(m), m.rows);
}

caf::expected<float_matrix> read_factor_part(const checkpoint_dir& root,
                                             const checkpoint_manifest& manifest, wals_side side,
                                             uint32_t index, uint32_t count) {
  auto name = "/" + factor_part_name(side, index, count);
  auto part = std::find_if(manifest.parts.begin(), manifest.parts.end(),
                           [&](const file_info& p) { return ends_with(p.path, name); });
  if (part == manifest.parts.end())
    return make_error(errc::corrupt_file, root.root() + ": the checkpoint has no part " +
                                            name.substr(1) + " (written by another layout?)");
  auto bytes = root.read_part(*part);
  if (!bytes)
    return std::move(bytes.error());
  return decode_matrix(*bytes, (fs::path{root.root()} / part->path).string());
}

caf::expected<checkpoint_manifest> read_wals_checkpoint(const checkpoint_dir& root) {
  auto m = root.read_manifest();
  if (!m && is(m.error(), errc::not_found))
    return read_format_1(root);
  if (!m)
    return m;
  if (m->service != wals_service_name)
    return make_error(errc::corrupt_file, root.root() + ": holds a checkpoint of the '" +
                                            m->service + "' service, not of WALS");
  return m;
}

caf::expected<checkpoint_manifest> find_wals_checkpoint(const checkpoint_dir& root, uint64_t run_id,
                                                        std::vector<std::string>& skipped) {
  // A candidate is usable when it is WALS's, of this run, and every part reads intact.
  auto usable = [&](const std::string& where, caf::expected<checkpoint_manifest> m) -> bool {
    if (!m) {
      if (!is(m.error(), errc::not_found))
        skipped.push_back(where + ": " + render(m.error()));
      return false;
    }
    if (m->service != wals_service_name || m->wals.run_id != run_id) {
      skipped.push_back(where + ": a checkpoint of another run");
      return false;
    }
    auto err = root.verify(*m);
    for (auto& part : m->parts)
      if (!err && part.checksum == 0 && part.bytes == 0)
        if (auto bytes = root.read_part(part))
          err = error_of(decode_matrix(*bytes, part.path));
    if (err)
      skipped.push_back(where + ": " + render(err));
    return !err;
  };
  auto current = root.read_manifest();
  std::string named = current ? current->checkpoint : std::string{};
  if (current && current->service == wals_service_name && usable("the current checkpoint", current))
    return current;
  if (!current && !is(current.error(), errc::not_found))
    skipped.push_back("the MANIFEST: " + render(current.error()));
  else if (current && current->service != wals_service_name)
    return make_error(errc::corrupt_file, root.root() + ": holds a checkpoint of the '" +
                                            current->service + "' service, not of WALS");
  for (auto& id : root.checkpoints()) {
    if (id == named)
      continue;
    auto m = root.read_manifest_of(id);
    if (usable(id, m))
      return m;
  }
  auto legacy = read_format_1(root);
  if (usable("the format-1 checkpoint", legacy))
    return legacy;
  return make_error(errc::not_found, root.root() + ": no usable checkpoint of this run");
}

std::string wals_event_log(const checkpoint_dir& root) {
  return (fs::path{root.root()} / "events.log").string();
}

} // namespace darcy::stores
