#include "runtime/http/status_page.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace darcy::runtime {
namespace {

node_view two_member_view() {
  node_view v;
  v.node = "node-1";
  cluster_status st;
  st.seed = "node-0";
  st.now_ms = 10000;
  member_info a;
  a.name = "node-0";
  a.host = "10.0.0.1";
  a.port = 7000;
  a.joined_ms = 4000;
  a.http_port = 9100;
  member_info b = a;
  b.name = "<b&>";
  b.state = member_state::down;
  st.members = {a, b};
  st.services = {{"emb.shard.0", "node-0", {}}};
  v.cluster = st;
  v.store_rows = {{{{"instance", "0.7"}, {"table", "words"}}, 42}};
  v.curves["wals loss, run 1"] = {{1, 10}, {2, 5}, {3, 4}};
  return v;
}

TEST(status_page, the_page_lists_members_services_shards_and_curves_escaped) {
  auto page = render_status_page(two_member_view());
  struct row {
    const char* what;
    const char* text;
  } rows[] = {
    {"a live member with its uptime and page", "<td>6 s</td><td>http://10.0.0.1:9100/</td>"},
    {"a member's name escaped", "data-name=\"&lt;b&amp;&gt;\""},
    {"a down member", "<td>down</td>"},
    {"a service",
     "<tr class=\"service\" data-name=\"emb.shard.0\"><td>emb.shard.0</td><td>node-0</td>"},
    {"a shard's rows", "<td>0.7</td><td>words</td><td>42</td>"},
    {"a curve", "<polyline"},
    {"its last value", "wals loss, run 1: 4 at step 3 (3 points)"},
    {"no restarts", "no restarts"},
    {"a refresh", "http-equiv=\"refresh\""},
  };
  for (auto& r : rows)
    EXPECT_NE(page.find(r.text), std::string::npos) << r.what << "\n" << page;
  EXPECT_EQ(page.find("<b&>"), std::string::npos) << "unescaped name";
}

TEST(status_page, a_registry_that_does_not_answer_is_said_instead_of_members) {
  node_view v;
  v.node = "n";
  v.cluster_error = "timeout";
  auto page = render_status_page(v);
  EXPECT_NE(page.find("cluster status unavailable: timeout"), std::string::npos) << page;
  auto json = nlohmann::json::parse(render_status_json(v));
  EXPECT_EQ(json["cluster_error"], "timeout");
}

TEST(status_page, the_json_holds_the_same_view) {
  auto json = nlohmann::json::parse(render_status_json(two_member_view()));
  EXPECT_EQ(json["node"], "node-1");
  ASSERT_EQ(json["members"].size(), 2u);
  EXPECT_EQ(json["members"][0]["http_port"], 9100);
  EXPECT_EQ(json["members"][1]["state"], "down");
  EXPECT_EQ(json["store_rows"][0]["table"], "words");
  EXPECT_EQ(json["store_rows"][0]["value"], 42);
  EXPECT_EQ(json["curves"]["wals loss, run 1"].size(), 3u);
}

} // namespace
} // namespace darcy::runtime
