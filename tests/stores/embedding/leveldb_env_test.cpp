#include "stores/embedding/leveldb_env.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

TEST(leveldb_env, TableReadsReturnTheFilesBytesAndStopAtItsEnd) {
  auto path =
    (fs::temp_directory_path() / ("darcy_leveldb_env_" + std::to_string(::getpid()))).string();
  std::string bytes;
  for (int i = 0; i < 10000; ++i)
    bytes += static_cast<char>('a' + i % 26);
  std::ofstream{path, std::ios::binary} << bytes;
  leveldb::RandomAccessFile* raw = nullptr;
  ASSERT_TRUE(leveldb_env()->NewRandomAccessFile(path, &raw).ok());
  std::unique_ptr<leveldb::RandomAccessFile> file{raw};
  struct read_case {
    uint64_t offset;
    size_t n;
    size_t expected;
  };
  for (auto c : {read_case{0, 100, 100}, read_case{4095, 4097, 4097}, read_case{9990, 100, 10},
                 read_case{10000, 10, 0}}) {
    std::string scratch(c.n, '\0');
    leveldb::Slice got;
    ASSERT_TRUE(file->Read(c.offset, c.n, &got, scratch.data()).ok()) << c.offset;
    EXPECT_EQ(got.ToString(), bytes.substr(c.offset, c.expected)) << c.offset;
  }
  fs::remove(path);
  leveldb::RandomAccessFile* missing = nullptr;
  EXPECT_TRUE(leveldb_env()->NewRandomAccessFile(path, &missing).IsNotFound());
  EXPECT_EQ(missing, nullptr);
}

TEST(leveldb_env, TheSoftLimitOnOpenFilesIsRaisedToTheHardOne) {
  leveldb_env();
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(limit.rlim_cur, limit.rlim_max);
}

} // namespace
} // namespace darcy::stores
