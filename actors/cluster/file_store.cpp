#include "actors/cluster/file_store.hpp"

#include <algorithm>
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
    [](prune_atom, const std::string& root) -> caf::result<std::vector<std::string>> {
      if (auto err = check_path(root))
        return err;
      std::vector<std::string> names;
      std::error_code ec;
      for (auto it = std::filesystem::directory_iterator{root, ec};
           !ec && it != std::filesystem::directory_iterator{}; it.increment(ec))
        if (auto name = it->path().filename().string();
            it->is_directory() && name.rfind(checkpoint_folder_prefix, 0) == 0)
          names.push_back(std::move(name));
      if (ec && ec != std::errc::no_such_file_or_directory)
        return make_error(errc::io_error, "file store: cannot list " + root + ": " + ec.message());
      std::sort(names.begin(), names.end());
      return names;
    },
    [](prune_atom, const std::string& root,
       const std::vector<std::string>& names) -> caf::result<uint64_t> {
      if (auto err = check_path(root))
        return err;
      for (auto& name : names)
        if (name.rfind(checkpoint_folder_prefix, 0) != 0 || name.find('/') != std::string::npos ||
            name.find("..") != std::string::npos)
          return make_error(errc::invalid_argument,
                            "file store: '" + name + "' names no checkpoint folder");
      uint64_t removed = 0;
      for (auto& name : names) {
        std::error_code ec;
        auto gone = std::filesystem::remove_all(std::filesystem::path{root} / name, ec);
        if (ec)
          return make_error(errc::io_error,
                            "file store: cannot remove " + root + "/" + name + ": " + ec.message());
        removed += gone > 0;
      }
      return removed;
    },
  };
}

} // namespace darcy::actors
