#include "actors/cluster/file_store.hpp"

#include <filesystem>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

caf::error check_path(const std::string& path) {
  std::filesystem::path p{path};
  for (auto& part : p)
    if (part == "..")
      return make_error(errc::invalid_argument,
                        "file store: '" + path + "' is not an absolute path without '..'");
  if (!p.is_absolute())
    return make_error(errc::invalid_argument,
                      "file store: '" + path + "' is not an absolute path without '..'");
  return {};
}

} // namespace

file_store_actor::behavior_type file_store(file_store_actor::pointer) {
  return {
    [](write_atom, const std::string& path, const std::string& bytes) -> caf::result<ok_atom> {
      if (auto err = check_path(path))
        return err;
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path{path}.parent_path(), ec);
      if (ec)
        return make_error(errc::io_error,
                          "file store: cannot create the folder of " + path + ": " + ec.message());
      if (auto err = base::write_file_atomically(path, bytes, false))
        return err;
      return ok_atom::value;
    },
    [](fetch_atom, const std::string& path) -> caf::result<std::string> {
      if (auto err = check_path(path))
        return err;
      auto bytes = base::read_file(path);
      if (!bytes)
        return std::move(bytes.error());
      return std::move(*bytes);
    },
    [](stats_atom, const std::vector<file_info>& files) -> caf::result<std::vector<std::string>> {
      std::vector<std::string> missing;
      for (auto& f : files) {
        if (auto err = check_path(f.path))
          return err;
        std::error_code ec;
        auto size = std::filesystem::file_size(f.path, ec);
        if (ec || size != f.bytes)
          missing.push_back(f.path);
      }
      return missing;
    },
  };
}

} // namespace darcy::actors
