// runtime/tls: what a TLS directory must hold, and actor systems of this process built after
// set_process_tls: one publishes over TLS, a client with a certificate of the same CA gets
// in, one of another CA is refused (and counted as a failed handshake), one without TLS too.
// The certificates come from scripts/make_tls.sh.
#include "runtime/tls.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

namespace fs = std::filesystem;

TEST(tls_files, a_tls_directory_needs_its_three_files_and_names_the_first_missing) {
  test::temp_dir dir{"tls_dir"};
  struct {
    std::vector<const char*> present;
    const char* missing;
  } cases[] = {
    {{}, "ca.pem"},
    {{"ca.pem"}, "node.pem"},
    {{"ca.pem", "node.pem"}, "node.key"},
    {{"ca.pem", "node.pem", "node.key"}, nullptr},
  };
  for (auto& c : cases) {
    fs::remove_all(dir.path() + "/d");
    fs::create_directories(dir.path() + "/d");
    for (auto* file : c.present)
      std::ofstream{dir.path() + "/d/" + file} << "x";
    auto files = read_tls_dir(dir.path() + "/d");
    if (c.missing == nullptr) {
      ASSERT_TRUE(files) << render(files.error());
      EXPECT_EQ(files->ca, dir.path() + "/d/ca.pem");
      EXPECT_EQ(files->key, dir.path() + "/d/node.key");
      continue;
    }
    ASSERT_FALSE(files) << c.missing;
    EXPECT_TRUE(is(files.error(), errc::invalid_config));
    EXPECT_NE(render(files.error()).find(c.missing), std::string::npos) << render(files.error());
  }
}

class tls_systems : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new test::temp_dir{"tls_systems"};
    auto script = std::string{DARCY_SOURCE_DIR} + "/scripts/make_tls.sh";
    for (auto args : {" good node client", " rogue rogue"})
      ASSERT_EQ(std::system(("bash " + script + " " + dir_->path() + "/" + std::string{args + 1} +
                             " >/dev/null")
                              .c_str()),
                0);
  }
  static void TearDownTestSuite() { delete dir_; }
  void TearDown() override { set_process_tls(std::nullopt); }

  /// An actor system built with the TLS directory `name` (empty: without TLS).
  std::unique_ptr<caf::actor_system> system_with(const std::string& name) {
    if (name.empty()) {
      set_process_tls(std::nullopt);
    } else {
      auto files = read_tls_dir(dir_->path() + "/" + name);
      EXPECT_TRUE(files) << render(files.error());
      set_process_tls(*files);
    }
    configs_.push_back(std::make_unique<test::test_config>(name.empty() ? "plain" : "tls"));
    auto sys = std::make_unique<caf::actor_system>(*configs_.back());
    sys->await_actors_before_shutdown(false);
    return sys;
  }

  static test::temp_dir* dir_;
  std::vector<std::unique_ptr<test::test_config>> configs_;
};

test::temp_dir* tls_systems::dir_ = nullptr;

TEST_F(tls_systems, only_a_client_with_a_certificate_of_the_same_ca_gets_in) {
  auto server = system_with("good/node");
  EXPECT_TRUE(server->has_openssl_manager());
  auto worker = server->spawn(test::test_worker, std::string{"behind tls"});
  test::stop_on_exit guard{*server, worker};
  auto port = publish(worker, 0, "127.0.0.1");
  ASSERT_TRUE(port) << render(port.error());

  auto client = system_with("good/client");
  auto remote = connect_remote<caf::actor>(*client, "127.0.0.1", *port);
  ASSERT_TRUE(remote) << render(remote.error());
  EXPECT_EQ(ask<std::string>(*client, *remote, test::patience, ping_atom::value),
            caf::expected<std::string>{"behind tls"});

  auto before = tls_client_handshake_failures();
  auto rogue = system_with("rogue/rogue");
  EXPECT_FALSE(connect_remote<caf::actor>(*rogue, "127.0.0.1", *port));
  EXPECT_GT(tls_client_handshake_failures(), before);
  EXPECT_FALSE(last_tls_client_handshake_failure().empty());

  auto plain = system_with("");
  EXPECT_FALSE(plain->has_openssl_manager());
  EXPECT_FALSE(connect_remote<caf::actor>(*plain, "127.0.0.1", *port));
  // The refusals left the first client's connection up.
  EXPECT_EQ(ask<std::string>(*client, *remote, test::patience, ping_atom::value),
            caf::expected<std::string>{"behind tls"});
}

} // namespace
} // namespace darcy::runtime
