// Every node of a real 3-node cluster serves GET /metrics and a status page: the metrics count
// the embedding shards' requests and rows a client caused, a WALS chief's node draws its loss
// curve, and headless Chromium renders the page (a screenshot) with every member and service
// in its DOM. The Chromium part skips where no chromium is installed (scripts/deps.sh installs
// it for `make test`).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/testing/local_cluster.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

std::string get(uint16_t port, const std::string& path) {
  auto answer = http_exchange(port, http_request_text("GET", path, ""));
  EXPECT_EQ(http_status(answer), 200u) << path << ": " << answer.substr(0, 300);
  return http_body(answer);
}

/// The sum over the series of `name` whose labels contain `with`, in exposition `text`.
double sum_of(const std::string& text, const std::string& name, const std::string& with) {
  double total = 0;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + "{", 0) == 0 && line.find(with) != std::string::npos)
      total += std::stod(line.substr(line.rfind(' ') + 1));
  return total;
}

class status_page : public ::testing::Test {
protected:
  void SetUp() override {
    auto c = testing::local_cluster::start({.nodes = 3, .binary = DARCY_BINARY});
    ASSERT_TRUE(c) << render(c.error());
    nodes = std::move(*c);
    auto st = nodes->status();
    ASSERT_TRUE(st) << render(st.error());
    for (auto& m : st->members) {
      ASSERT_GT(m.http_port, 0) << m.name << " serves no status page";
      ports[m.name] = m.http_port;
    }
    ASSERT_EQ(ports.size(), 3u);
  }

  std::unique_ptr<testing::local_cluster> nodes;
  std::map<std::string, uint16_t> ports;
};

TEST_F(status_page, metrics_count_the_shards_requests_and_rows_a_client_caused) {
  auto s = ops::session::open({.seed = nodes->seed(), .shards = 1});
  ASSERT_TRUE(s) << render(s.error());
  de_config cfg;
  cfg.dim = 4;
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i)
    keys.push_back("key-" + std::to_string(i));
  for (int round = 0; round < 2; ++round) {
    auto rows = ops::dynamic_embedding_lookup(**s, keys, cfg, "status_emb");
    ASSERT_TRUE(rows) << render(rows.error());
  }
  double rows = 0, lookups = 0;
  for (auto& [name, port] : ports) {
    auto text = get(port, "/metrics");
    EXPECT_NE(text.find("# TYPE darcy_actors_running gauge"), std::string::npos) << name;
    rows += sum_of(text, "darcy_store_rows", "table=\"status_emb\"");
    lookups += sum_of(text, "darcy_service_requests_total", "service=\"embedding_shard\"");
    EXPECT_NE(text.find("# TYPE darcy_service_request_seconds histogram"), std::string::npos)
      << name;
  }
  // One shard per member holds its share of the 50 keys; each lookup reached every shard.
  EXPECT_EQ(rows, 50.0);
  EXPECT_GE(lookups, 2.0 * 3);
  auto bad = http_exchange(ports.begin()->second, http_request_text("GET", "/nothing", ""));
  EXPECT_EQ(http_status(bad), 404u);
}

TEST_F(status_page, the_chief_node_draws_the_wals_loss_curve) {
  temp_dir dir{"status_wals"};
  auto r = run_darcy({"wals",
                      "train",
                      "--synthetic-rows",
                      "300",
                      "--synthetic-cols",
                      "200",
                      "--synthetic-nnz",
                      "3000",
                      "--dim",
                      "4",
                      "--iters",
                      "3",
                      "--workers",
                      "2",
                      "--cluster",
                      runtime::to_string(nodes->seed()),
                      "--chief-node",
                      "node-1",
                      "--out",
                      dir.path() + "/model",
                      "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto status = nlohmann::json::parse(get(ports["node-1"], "/status.json"));
  ASSERT_TRUE(status.contains("curves")) << status.dump();
  auto& curves = status["curves"];
  ASSERT_EQ(curves.size(), 1u) << status.dump();
  EXPECT_EQ(curves.begin().value().size(), 3u) << status.dump();
  EXPECT_EQ(curves.begin().key().rfind("wals loss", 0), 0u) << status.dump();
  auto page = get(ports["node-1"], "/");
  EXPECT_NE(page.find("<polyline"), std::string::npos);
}

TEST_F(status_page, headless_chromium_renders_every_member_and_service) {
  const char* chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium))
    GTEST_SKIP() << "no " << chromium << " (scripts/deps.sh installs it)";
  auto s = ops::session::open({.seed = nodes->seed(), .shards = 1});
  ASSERT_TRUE(s) << render(s.error());
  ASSERT_FALSE((*s)->publish_embeddings("status.embeddings", "status-test"));
  temp_dir dir{"status_chromium"};
  auto url = "http://127.0.0.1:" + std::to_string(ports["node-2"]) + "/";
  // Through a shell, so that Chromium's chatter goes to a file instead of a pipe nobody reads.
  auto run_chromium = [&](const std::string& what) {
    std::string command = std::string{"exec "} + chromium +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                          " --disable-background-networking --disable-component-update"
                          " --disable-sync --window-size=1200,900 --user-data-dir=" +
                          dir.path() + "/profile " + what + " 2>>" + dir.path() + "/chromium.log";
    auto run = runtime::child_process::start({"/bin/sh", "-c", command});
    ASSERT_TRUE(run) << render(run.error());
    auto code = run->wait(std::chrono::seconds(120));
    auto log = [&] {
      std::ifstream in{dir.path() + "/chromium.log"};
      std::string text{std::istreambuf_iterator<char>{in}, {}};
      return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
    };
    ASSERT_TRUE(code) << "chromium took too long; its log ends:\n" << log();
    EXPECT_EQ(*code, 0) << what << "; chromium's log ends:\n" << log();
  };
  run_chromium("--screenshot=" + dir.path() + "/status.png " + url);
  std::ifstream png{dir.path() + "/status.png", std::ios::binary};
  std::string magic(8, '\0');
  png.read(magic.data(), 8);
  EXPECT_EQ(magic, std::string("\x89PNG\r\n\x1a\n", 8)) << "no screenshot";
  run_chromium("--dump-dom " + url + " >" + dir.path() + "/dom.html");
  std::ifstream dom_file{dir.path() + "/dom.html"};
  std::string dom{std::istreambuf_iterator<char>{dom_file}, {}};
  auto st = nodes->status();
  ASSERT_TRUE(st);
  for (auto& m : st->members)
    EXPECT_NE(dom.find("<tr class=\"member\" data-name=\"" + m.name + "\">"), std::string::npos)
      << m.name << " is not on the page: " << dom.substr(0, 2000);
  ASSERT_FALSE(st->services.empty());
  for (auto& svc : st->services)
    EXPECT_NE(dom.find("<tr class=\"service\" data-name=\"" + svc.name + "\">"), std::string::npos)
      << svc.name << " is not on the page";
}

} // namespace
} // namespace darcy::test
