#include "stores/checkpoint/matrix_file.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

TEST(matrix_file, RoundTripsAndRefusesDamagedFiles) {
  auto dir = fs::temp_directory_path() / ("darcy_matrix_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto path = (dir / "m.f32").string();
  float_matrix m{3, 2, {1, 2, 3, 4, 5, 6}};
  ASSERT_FALSE(write_matrix_file(path, m));
  auto back = read_matrix_file(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rows, 3u);
  EXPECT_EQ(back->values, m.values);

  auto bytes = fs::file_size(path);
  struct damage {
    const char* what;
    void (*apply)(const std::string&, uintmax_t);
  } cases[] = {
    {"truncated", [](const std::string& p, uintmax_t n) { fs::resize_file(p, n - 4); }},
    {"flipped byte",
     [](const std::string& p, uintmax_t n) {
       std::fstream f{p, std::ios::in | std::ios::out | std::ios::binary};
       f.seekp(static_cast<std::streamoff>(n - 1));
       f.put('\x7f');
     }},
    {"not a matrix", [](const std::string& p, uintmax_t) { std::ofstream{p} << "hello"; }},
  };
  for (auto& c : cases) {
    ASSERT_FALSE(write_matrix_file(path, m));
    c.apply(path, bytes);
    auto r = read_matrix_file(path);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), errc::corrupt_file)) << c.what << ": " << render(r.error());
  }
  EXPECT_TRUE(is(error_of(read_matrix_file((dir / "none").string())), errc::not_found));
  fs::remove_all(dir);
}

} // namespace
} // namespace darcy::stores
