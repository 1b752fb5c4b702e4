#include "stores/checkpoint_dir.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <unistd.h>

#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "stores/atomic_file.hpp"
#include "stores/checkpoint_io.hpp"

namespace darcy::stores {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view checkpoint_prefix = "ckpt-";

bool is_temporary(const std::string& name) {
  return name.find(".tmp.") != std::string::npos;
}

} // namespace

std::string checkpoint_dir::new_id(const std::string& label) {
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::string{checkpoint_prefix} + label + "-" + std::to_string(++counter) + "-" +
         std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

std::string checkpoint_dir::path(const std::string& rel) const {
  return (fs::path{root_} / rel).string();
}

caf::error checkpoint_dir::prepare() const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create directory " + root_ + ": " +
                                        ec.message());
  auto probe = path(".write-test.tmp." + std::to_string(::getpid()));
  if (auto err = write_file_atomically(probe, "ok"))
    return make_error(errc::io_error, "directory " + root_ + " is not writable: " +
                                        render(err));
  fs::remove(probe, ec);
  return {};
}

caf::expected<file_info> checkpoint_dir::write_part(const std::string& rel,
                                                    std::string_view bytes,
                                                    uint64_t rows) const {
  auto full = path(rel);
  std::error_code ec;
  fs::create_directories(fs::path{full}.parent_path(), ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + fs::path{full}.parent_path().string() +
                                        ": " + ec.message());
  if (auto err = write_file_atomically(full, bytes))
    return err;
  return file_info{rel, compute::hash_key(bytes), rows, bytes.size()};
}

caf::expected<std::string> checkpoint_dir::read_part(const file_info& part) const {
  auto full = path(part.path);
  auto bytes = read_file(full);
  if (!bytes)
    return is(bytes.error(), errc::not_found) ? make_error(errc::corrupt_file, full + ": missing")
                                              : std::move(bytes.error());
  bool unchecked = part.checksum == 0 && part.bytes == 0;
  if (!unchecked && (bytes->size() != part.bytes || compute::hash_key(*bytes) != part.checksum))
    return make_error(errc::corrupt_file,
                      full + ": size or checksum does not match the manifest");
  return bytes;
}

caf::error checkpoint_dir::commit(const checkpoint_manifest& manifest) const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (auto err = write_manifest(root_, manifest)) {
    discard(manifest.checkpoint);
    return err;
  }
  for (auto& entry : fs::directory_iterator(root_, ec)) {
    auto name = entry.path().filename().string();
    bool stale_checkpoint = name.rfind(checkpoint_prefix, 0) == 0 && name != manifest.checkpoint;
    if (stale_checkpoint || is_temporary(name))
      fs::remove_all(entry.path(), ec);
  }
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
