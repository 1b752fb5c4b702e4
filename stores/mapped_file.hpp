// A whole file mapped read-only into memory, shared by whoever holds it: serving loads its
// exported indexes this way, so that loading copies nothing and the shards of one node share
// the page cache.
//
//   auto file = stores::mapped_file::open("EXPORTS/m/3/shard-0/codes.u8");
//   std::string_view bytes = (*file)->bytes();
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace darcy::stores {

class mapped_file {
public:
  /// errc::not_found for a missing file, errc::io_error when it cannot be mapped. An empty
  /// file maps to no bytes.
  static caf::expected<std::shared_ptr<const mapped_file>> open(const std::string& path);

  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

private:
  mapped_file(std::string path, void* data, size_t size)
    : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  void* data_;
  size_t size_;
};

} // namespace darcy::stores
