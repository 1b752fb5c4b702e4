// A fresh directory under the system's temp directory for one test, removed with everything in
// it when the test ends: tests that write files share this instead of each a fixture of its own.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <string>

namespace darcy::test {

class temp_dir {
public:
  /// Creates TMP/darcy_<prefix>_<pid>, empty.
  explicit temp_dir(const std::string& prefix)
    : path_((std::filesystem::temp_directory_path() /
             ("darcy_" + prefix + "_" + std::to_string(::getpid())))
              .string()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }

private:
  std::string path_;
};

} // namespace darcy::test
