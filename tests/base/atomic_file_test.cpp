#include "base/atomic_file.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::base {
namespace {

namespace fs = std::filesystem;

class atomic_file_test : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("darcy_atomic_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(atomic_file_test, ReplacesContentAndLeavesNoTemporaryFiles) {
  auto path = (dir_ / "manifest").string();
  ASSERT_FALSE(write_file_atomically(path, "first"));
  ASSERT_FALSE(write_file_atomically(path, std::string(100000, 'z')));
  auto read = read_file(path);
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, std::string(100000, 'z'));
  size_t files = 0;
  for (auto& entry : fs::directory_iterator(dir_)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST_F(atomic_file_test, ReportsMissingFilesAndDirectories) {
  auto missing = read_file((dir_ / "nope").string());
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(error_of(missing), errc::not_found));
  auto err = write_file_atomically((dir_ / "no_dir" / "f").string(), "x");
  EXPECT_TRUE(is(err, errc::io_error)) << render(err);
}

} // namespace
} // namespace darcy::base
