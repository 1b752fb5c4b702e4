// ops::serve_model: the serve app's entry point starts a model's root on the session's cluster,
// which loads from the model's own folder; an in-process session hosts the shard servers itself.
#include "ops/serving.hpp"

#include <chrono>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

using namespace std::chrono_literals;

TEST(serving, an_in_process_session_hosts_the_shard_servers_itself) {
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  auto nodes = shard_server_nodes(**s);
  ASSERT_TRUE(nodes) << render(nodes.error());
  EXPECT_TRUE(nodes->empty());
}

TEST(serving, a_served_model_loads_from_its_own_folder_and_names_what_is_missing) {
  test::temp_dir dir{"ops_serving"};
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  actors::serving_root_config cfg;
  cfg.model = "artists";
  cfg.model_dir = dir.path() + "/artists";
  auto root = serve_model(**s, cfg);
  auto loaded = runtime::ask<std::string>((*s)->system(), root, 10s, load_atom::value,
                                          request_context{.principal = "admin"}, std::string{});
  ASSERT_FALSE(loaded);
  EXPECT_TRUE(is(loaded.error(), errc::not_found)) << render(loaded.error());
  auto status = runtime::ask<model_status>((*s)->system(), root, 10s, status_atom::value);
  ASSERT_TRUE(status) << render(status.error());
  EXPECT_EQ(status->model, "artists");
  EXPECT_TRUE(status->version.empty());
}

} // namespace
} // namespace darcy::ops
