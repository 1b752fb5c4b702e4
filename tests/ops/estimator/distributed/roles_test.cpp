// DARCY_CONFIG documents give each task its role and the cluster's addresses; every malformed
// document is refused with errc::invalid_config naming the problem.
#include "ops/estimator/distributed/roles.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::ops::estimator {
namespace {

constexpr auto cluster = R"({"chief": ["10.0.0.1:7100"], "ps": ["10.0.0.2:7100", "10.0.0.3:7100"],
                             "worker": ["10.0.0.4:7100", "127.0.0.1:0"],
                             "evaluator": ["10.0.0.5:7100"]})";

std::string document(const std::string& task) {
  return std::string{R"({"cluster": )"} + cluster + R"(, "task": )" + task + "}";
}

TEST(roles, darcy_config_gives_the_task_its_role_address_and_node_name) {
  struct {
    std::string task;
    task_type type;
    uint32_t index;
    std::string name;
    std::string address;
  } cases[] = {
    {R"({"type": "chief", "index": 0})", task_type::chief, 0, "chief-0", "10.0.0.1:7100"},
    {R"({"type": "ps", "index": 1})", task_type::ps, 1, "ps-1", "10.0.0.3:7100"},
    {R"({"type": "worker", "index": 1})", task_type::worker, 1, "worker-1", "127.0.0.1:0"},
    {R"({"type": "evaluator"})", task_type::evaluator, 0, "evaluator-0", "10.0.0.5:7100"},
  };
  for (auto& c : cases) {
    auto r = parse_role_config(document(c.task));
    ASSERT_TRUE(r) << c.task << ": " << render(r.error());
    EXPECT_EQ(r->type, c.type) << c.task;
    EXPECT_EQ(r->index, c.index) << c.task;
    EXPECT_EQ(r->node_name(), c.name);
    EXPECT_EQ(runtime::to_string(r->address()), c.address);
    EXPECT_EQ(runtime::to_string(r->chief()), "10.0.0.1:7100");
    EXPECT_EQ(r->count(task_type::ps), 2u);
    EXPECT_EQ(r->count(task_type::worker), 2u);
  }
}

TEST(roles, flags_give_the_task_for_a_cluster_alone) {
  auto r = parse_role_config(cluster, "worker", 0);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->node_name(), "worker-0");
  auto wrapped = parse_role_config(std::string{R"({"cluster": )"} + cluster + "}", "ps", 0);
  ASSERT_TRUE(wrapped) << render(wrapped.error());
  EXPECT_EQ(wrapped->node_name(), "ps-0");
}

TEST(roles, malformed_configs_are_refused_naming_the_problem) {
  struct {
    std::string doc;
    std::string mentions;
  } cases[] = {
    {"not json", "not JSON"},
    {R"({"task": {"type": "chief"}})", "cluster"},
    {document(R"({"type": "janitor"})"), "unknown task type 'janitor'"},
    {document(R"({"index": 0})"), "task"},
    {document(R"({"type": "ps", "index": 2})"), "ps 2 is not in the cluster"},
    {document(R"({"type": "ps", "index": -1})"), "index"},
    {R"({"cluster": {"chief": ["a:1", "b:2"], "ps": ["c:3"], "worker": ["d:4"]},
         "task": {"type": "ps"}})",
     "exactly one chief"},
    {R"({"cluster": {"chief": ["a:1"], "worker": ["d:4"]}, "task": {"type": "chief"}})",
     "at least one ps"},
    {R"({"cluster": {"chief": ["a:1"], "ps": ["nocolon"], "worker": ["d:4"]},
         "task": {"type": "chief"}})",
     "'\"nocolon\"' is not HOST:PORT"},
    {R"({"cluster": {"chief": ["a:0"], "ps": ["c:3"], "worker": ["d:4"]},
         "task": {"type": "worker"}})",
     "chief needs a port"},
  };
  for (auto& c : cases) {
    auto r = parse_role_config(c.doc);
    ASSERT_FALSE(r) << c.doc;
    EXPECT_TRUE(is(r.error(), errc::invalid_config)) << c.doc;
    EXPECT_NE(render(r.error()).find(c.mentions), std::string::npos)
      << c.doc << " -> " << render(r.error());
  }
}

TEST(roles, malformed_flags_are_refused_naming_the_flag_and_the_problem) {
  struct {
    std::string cluster_spec;
    std::string type;
    uint32_t index;
    std::string mentions;
  } cases[] = {
    {cluster, "boss", 0, "--task-type: unknown task type 'boss'"},
    {"", "worker", 0, "--cluster-spec: --task-type worker needs the cluster's addresses"},
    {"{bad", "worker", 0, "--cluster-spec: not JSON"},
    {cluster, "worker", 7, "--cluster-spec: task worker 7 is not in the cluster"},
    {R"({"chief": ["a:1"], "worker": ["d:4"]})", "chief", 0,
     "--cluster-spec: the cluster needs at least one ps"},
  };
  for (auto& c : cases) {
    auto r = parse_role_config(c.cluster_spec, c.type, c.index);
    ASSERT_FALSE(r) << c.mentions;
    EXPECT_TRUE(is(r.error(), errc::invalid_config)) << c.mentions;
    EXPECT_NE(render(r.error()).find(c.mentions), std::string::npos) << render(r.error());
  }
}

} // namespace
} // namespace darcy::ops::estimator
