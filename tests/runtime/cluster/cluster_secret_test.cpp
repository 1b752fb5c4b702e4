#include "runtime/cluster/cluster_secret.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::runtime {
namespace {

std::string write_secret(const test::temp_dir& dir, const std::string& name,
                         const std::string& text, mode_t mode) {
  auto path = dir.path() + "/" + name;
  std::ofstream{path} << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(cluster_secret, a_private_file_gives_its_trimmed_secret) {
  test::temp_dir dir{"secret"};
  auto secret = read_secret_file(write_secret(dir, "s", "  open sesame \n", 0600));
  ASSERT_TRUE(secret) << render(secret.error());
  EXPECT_EQ(*secret, "open sesame");
}

TEST(cluster_secret, unusable_files_are_refused_with_the_reason) {
  test::temp_dir dir{"secret"};
  struct case_ {
    std::string path;
    const char* reason;
  } cases[] = {
    {dir.path() + "/missing", "does not exist"},
    {write_secret(dir, "empty", " \n\t", 0600), "is empty"},
    {write_secret(dir, "shared", "x", 0644), "chmod 600"},
    {write_secret(dir, "group", "x", 0640), "chmod 600"},
  };
  for (auto& c : cases) {
    auto secret = read_secret_file(c.path);
    ASSERT_FALSE(secret) << c.path;
    EXPECT_TRUE(is(secret.error(), errc::invalid_config));
    EXPECT_NE(render(secret.error()).find(c.reason), std::string::npos) << render(secret.error());
  }
}

TEST(cluster_secret, credentials_hide_the_secret_and_tell_secrets_apart) {
  auto a = credential_of("alpha");
  EXPECT_EQ(a, credential_of("alpha"));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find("alpha"), std::string::npos);
  EXPECT_NE(a, credential_of("alphb"));
  EXPECT_TRUE(credential_of("").empty());
  EXPECT_TRUE(same_credential(a, credential_of("alpha")));
  EXPECT_FALSE(same_credential(a, credential_of("beta")));
  EXPECT_FALSE(same_credential(a, a.substr(0, 63)));
  EXPECT_FALSE(same_credential(a, ""));
}

} // namespace
} // namespace darcy::runtime
