#include "stores/checkpoint/checkpoint_dir.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>

#include "base/atomic_file.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"

namespace darcy::stores {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view checkpoint_prefix = "ckpt-";

bool is_temporary(const std::string& name) {
  return name.find(".tmp.") != std::string::npos;
}

} // namespace

caf::error check_checkpoint_name(std::string_view id) {
  constexpr std::string_view separators{"/\\\0", 3};
  if (id.empty() || id == "." || id == ".." || id.find_first_of(separators) != id.npos)
    return make_error(errc::invalid_argument,
                      "a version or checkpoint id must name a folder inside its root: not empty, "
                      "no '/' or '\\', not '.' or '..'");
  return {};
}

std::string checkpoint_dir::new_id(const std::string& label) {
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::string{checkpoint_prefix} + label + "-" + std::to_string(++counter) + "-" +
         std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

std::string checkpoint_dir::next_version() const {
  uint64_t highest = 0;
  for (auto& id : checkpoints())
    if (id.find_first_not_of("0123456789") == std::string::npos && id.size() <= 18)
      highest = std::max<uint64_t>(highest, std::stoull(id));
  return std::to_string(highest + 1);
}

std::string checkpoint_dir::path(const std::string& rel) const {
  return (fs::path{root_} / rel).string();
}

caf::error checkpoint_dir::prepare() const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create directory " + root_ + ": " + ec.message());
  auto probe = path(".write-test.tmp." + std::to_string(::getpid()));
  if (auto err = base::write_file_atomically(probe, "ok"))
    return make_error(errc::io_error, "directory " + root_ + " is not writable: " + render(err));
  fs::remove(probe, ec);
  return {};
}

caf::expected<file_info> checkpoint_dir::write_part(const std::string& rel, std::string_view bytes,
                                                    uint64_t rows) const {
  auto full = path(rel);
  std::error_code ec;
  fs::create_directories(fs::path{full}.parent_path(), ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + fs::path{full}.parent_path().string() +
                                        ": " + ec.message());
  if (auto err = base::write_file_atomically(full, bytes, durable_))
    return err;
  return file_info{rel, compute::hash_key(bytes), rows, bytes.size()};
}

caf::expected<std::string> checkpoint_dir::read_part(const file_info& part) const {
  auto full = path(part.path);
  auto bytes = base::read_file(full);
  if (!bytes)
    return is(bytes.error(), errc::not_found) ? make_error(errc::corrupt_file, full + ": missing")
                                              : std::move(bytes.error());
  bool unchecked = part.checksum == 0 && part.bytes == 0;
  if (!unchecked && (bytes->size() != part.bytes || compute::hash_key(*bytes) != part.checksum))
    return make_error(errc::corrupt_file, full + ": size or checksum does not match the manifest");
  return bytes;
}

caf::expected<std::shared_ptr<const mapped_file>> checkpoint_dir::map_part(
  const file_info& part) const {
  auto full = path(part.path);
  auto file = mapped_file::open(full);
  if (!file)
    return is(file.error(), errc::not_found) ? make_error(errc::corrupt_file, full + ": missing")
                                             : std::move(file.error());
  auto bytes = (*file)->bytes();
  if (bytes.size() != part.bytes || compute::hash_key(bytes) != part.checksum)
    return make_error(errc::corrupt_file, full + ": size or checksum does not match the manifest");
  return file;
}

caf::error checkpoint_dir::commit(const checkpoint_manifest& manifest, size_t keep) const {
  std::error_code ec;
  fs::create_directories(path(manifest.checkpoint), ec);
  auto err = write_manifest(path(manifest.checkpoint), manifest, durable_);
  if (!err)
    err = write_manifest(root_, manifest, durable_);
  if (err) {
    discard(manifest.checkpoint);
    return err;
  }
  // Whole chains go: the new checkpoint's chain and the newest others stay, each with every
  // checkpoint its base links reach.
  auto ids = checkpoints();
  ids.insert(ids.begin(), manifest.checkpoint);
  std::set<std::string> kept;
  size_t chains = 0;
  for (auto& id : ids) {
    if (kept.count(id) > 0)
      continue;
    if (chains++ >= std::max<size_t>(keep, 1))
      break;
    for (auto at = id; !at.empty() && kept.insert(at).second;) {
      auto m = at == manifest.checkpoint ? caf::expected<checkpoint_manifest>{manifest}
                                         : read_manifest_of(at);
      at = m ? m->base : std::string{};
    }
  }
  for (auto& id : checkpoints())
    if (kept.count(id) == 0)
      fs::remove_all(path(id), ec);
  for (auto& entry : fs::directory_iterator(root_, ec))
    if (is_temporary(entry.path().filename().string()))
      fs::remove_all(entry.path(), ec);
  return {};
}

std::vector<std::string> checkpoint_dir::checkpoints() const {
  // An id ends with the microseconds of its creation: order by that, newest first.
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(root_, ec)) {
    auto name = entry.path().filename().string();
    bool version = !name.empty() && name.size() <= 18 &&
                   name.find_first_not_of("0123456789") == std::string::npos;
    if (version && entry.is_directory(ec)) {
      found.emplace_back(std::stoull(name), name);
      continue;
    }
    if (name.rfind(checkpoint_prefix, 0) != 0 || !entry.is_directory(ec))
      continue;
    // A directory whose name does not end in a time counts as the oldest.
    auto digits = name.substr(name.rfind('-') + 1);
    bool timed = !digits.empty() && digits.size() <= 19 &&
                 digits.find_first_not_of("0123456789") == std::string::npos;
    found.emplace_back(timed ? std::stoull(digits) : 0, name);
  }
  std::sort(found.begin(), found.end(), std::greater<>{});
  std::vector<std::string> result;
  for (auto& [micros, name] : found)
    result.push_back(name);
  return result;
}

caf::expected<checkpoint_manifest> checkpoint_dir::read_manifest_of(const std::string& id) const {
  if (auto err = check_checkpoint_name(id))
    return err;
  return stores::read_manifest(path(id));
}

caf::error checkpoint_dir::verify(const checkpoint_manifest& manifest) const {
  for (auto& part : manifest.parts)
    if (auto bytes = read_part(part); !bytes)
      return std::move(bytes.error());
  for (auto& entry : manifest.embeddings)
    for (auto& file : entry.files)
      if (auto bytes = read_part(file); !bytes)
        return std::move(bytes.error());
  return {};
}

void checkpoint_dir::discard(const std::string& id) const {
  if (id.rfind(checkpoint_prefix, 0) != 0)
    return;
  std::error_code ec;
  fs::remove_all(path(id), ec);
}

caf::expected<checkpoint_manifest> checkpoint_dir::read_manifest() const {
  return stores::read_manifest(root_);
}

} // namespace darcy::stores
