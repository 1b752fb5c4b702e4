// apps/serving/torch_runner: LibTorch is mapped only once a module is loaded, from the file
// $DARCY_TORCH_RUNNER names, or else the plugin found first beside the executable or in
// ../lib/darcy; bytes LibTorch cannot read are refused as a corrupt file, and a build without
// the plugin refuses every module as unsupported.
#include "apps/serving/torch_runner/torch_script.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::serving {
namespace {

bool libtorch_mapped() {
  std::ifstream maps{"/proc/self/maps"};
  std::string text{std::istreambuf_iterator<char>{maps}, {}};
  return text.find("libtorch_cpu") != std::string::npos;
}

TEST(torch_script_test, the_plugin_is_the_file_the_environment_names_or_is_found_by_the_binary) {
  ASSERT_EQ(setenv("DARCY_TORCH_RUNNER", "/opt/runner.so", 1), 0);
  auto named = torch_script::plugin_paths();
  ASSERT_EQ(unsetenv("DARCY_TORCH_RUNNER"), 0);
  EXPECT_EQ(named, std::vector<std::string>{"/opt/runner.so"});
  auto paths = torch_script::plugin_paths();
  auto exe = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  ASSERT_GE(paths.size(), 2u);
  EXPECT_EQ(paths[0], (exe / torch_runner::file_name).string());
  EXPECT_EQ(paths[1],
            (exe.parent_path() / "lib/darcy" / torch_runner::file_name).lexically_normal());
}

TEST(torch_script_test, libtorch_is_mapped_by_the_first_load_and_bad_bytes_are_a_corrupt_file) {
  EXPECT_FALSE(libtorch_mapped()) << "a binary that runs no module maps LibTorch";
  bool plugin = false;
  for (auto& p : torch_script::plugin_paths())
    plugin = plugin || std::filesystem::exists(p);
  auto loaded = torch_script::load("not a TorchScript archive");
  ASSERT_FALSE(loaded);
  if (!plugin) {
    EXPECT_TRUE(is(loaded.error(), errc::unsupported)) << render(loaded.error());
    return;
  }
  EXPECT_TRUE(is(loaded.error(), errc::corrupt_file)) << render(loaded.error());
  EXPECT_NE(render(loaded.error()).find("LibTorch cannot load its module"), std::string::npos)
    << render(loaded.error());
  EXPECT_TRUE(libtorch_mapped());
}

} // namespace
} // namespace darcy::serving
