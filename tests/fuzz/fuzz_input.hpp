// Helpers for the libFuzzer targets: each one turns the fuzzer's bytes into the input a reader
// takes (a file for the readers that take paths), calls it, and must return 0 whatever the
// reader answers. A crash, a sanitizer report or a hang is the finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace darcy::fuzz {

/// A directory of this process's own, created on first use.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("darcy_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

/// Writes `bytes` to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const std::string& bytes) {
  auto path = scratch_dir() + "/" + name;
  std::ofstream{path, std::ios::binary | std::ios::trunc}.write(
    bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string as_string(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace darcy::fuzz
