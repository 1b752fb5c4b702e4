// `darcy estimator ctr --stream` as a user runs it: a training process SIGKILLed in the middle
// of its stream, started again with the same --sync-dir, resumes after the rows of its last
// sync instead of starting over; `darcy serve` in a network namespace of its own, with folders
// of its own, follows the stream's syncs pushed to it as messages.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_row_stream.hpp"
#include "ops/estimator/export/export.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/netns.hpp"
#include "runtime/process/process.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

using namespace std::chrono_literals;

/// The arguments after `darcy` of a small DLRM on the generated stream, syncing each window.
std::vector<std::string> stream_args(const std::string& sync_dir, const std::string& windows) {
  return {"estimator",    "ctr",  "--stream",  "generate", "--max-ids",  "1000",
          "--window",     "1000", "--windows", windows,    "--sync-dir", sync_dir,
          "--sync-every", "0",    "--bottom",  "64,16",    "--top",      "64",
          "--threads",    "1",    "--quiet"};
}

TEST(estimator_stream_cli, a_killed_stream_run_resumes_after_the_rows_of_its_last_sync) {
  temp_dir tmp{"stream_resume"};
  auto sync_dir = tmp.path() + "/sync";
  auto args = stream_args(sync_dir, "0");
  args.insert(args.begin(), DARCY_BINARY);
  auto first = runtime::child_process::start(args);
  ASSERT_TRUE(first) << render(first.error());
  uint64_t seen = 0;
  for (int w = 0; w < 3; ++w) {
    auto line = first->wait_for_line("\"window\"", 120s);
    ASSERT_TRUE(line) << render(line.error()) << first->read_stderr();
    auto j = nlohmann::json::parse(*line);
    EXPECT_FALSE(j.value("sync_checkpoint", "").empty()) << *line;
    seen = j.value("rows", uint64_t{0});
  }
  first->signal(SIGKILL);
  ASSERT_TRUE(first->wait(60s));

  auto again = run_darcy(stream_args(sync_dir, "1"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto j = nlohmann::json::parse(again.out.substr(again.out.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << again.out;
  auto rows = j.value("rows", uint64_t{0});
  // The kill may land after one more window was synced.
  EXPECT_GE(rows, seen + 1000) << again.out;
  EXPECT_EQ(rows % 1000, 0u) << again.out;
  EXPECT_LE(rows, seen + 1000 * 5) << "resumed near where it died, not from the start";
  EXPECT_NE(again.err.find("resumed from"), std::string::npos) << again.err;
}

/// Rows of the generated stream that no run trained on (another seed), as a table.
std::shared_ptr<ops::estimator::example_table> probe_rows() {
  auto stream = ops::ctr::open_ctr_stream("generate", {.generator = {.seed = 99, .max_ids = 1000}});
  EXPECT_TRUE(stream);
  auto rows = ops::ctr::ctr_row_stream(std::move(*stream), true, 100ms);
  auto window = rows->next_window(16);
  EXPECT_TRUE(window && window->table);
  return window ? window->table : nullptr;
}

TEST(estimator_stream_cli, serving_in_its_own_namespace_follows_syncs_sent_over_the_wire) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  auto net = runtime::netns_network::create(1);
  ASSERT_TRUE(net) << render(net.error());
  temp_dir training{"wire_training"}, serving{"wire_serving"};
  auto sync_dir = training.path() + "/sync";
  auto exported = training.path() + "/exports/ctr";
  // The first window and the export that serving starts from; the operator copies it over.
  auto first_args = stream_args(sync_dir, "1");
  first_args.insert(first_args.end(), {"--export", exported});
  auto first = run_darcy(first_args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::filesystem::create_directories(serving.path() + "/exports/ctr");
  std::filesystem::copy(exported, serving.path() + "/exports/ctr",
                        std::filesystem::copy_options::recursive);

  // A client off loopback manages a model only with a token.
  std::ofstream{serving.path() + "/serve.toml"} << "[tokens]\n\"tok-train\" = \"trainer\"\n"
                                                << "[models.ctr]\nmanage = [\"trainer\"]\n";
  std::ofstream{training.path() + "/token"} << "tok-train\n";
  runtime::host_port address{(*net)->address(0), 8500};
  auto serve = runtime::child_process::start((*net)->in_namespace(
    0, {DARCY_BINARY, "serve", "--exports", serving.path() + "/exports", "--listen",
        runtime::to_string(address), "--sync-dir", serving.path() + "/sync", "--config",
        serving.path() + "/serve.toml", "--http-threads", "2", "--threads", "2"}));
  ASSERT_TRUE(serve) << render(serve.error());
  auto listening = serve->wait_for_line("listening", 60s);
  ASSERT_TRUE(listening) << render(listening.error()) << serve->read_stderr();

  // The stream resumes and pushes each sync to serving's address in the namespace.
  auto url = "http://" + runtime::to_string(address) + "/v1/models/ctr";
  auto second_args = stream_args(sync_dir, "4");
  second_args.insert(second_args.end(), {"--export", exported, "--sync-to", url,
                                         "--sync-token-file", training.path() + "/token"});
  auto second = run_darcy(second_args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  nlohmann::json last;
  uint64_t pushed = 0;
  std::istringstream lines{second.out};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{"))
      continue;
    last = nlohmann::json::parse(line);
    EXPECT_EQ(last.value("sync_status", 0u), 200u) << line;
    pushed += last.value("push_bytes", uint64_t{0});
  }
  EXPECT_GT(pushed, 0u) << "the rows travelled in the pushes";

  auto described = nlohmann::json::parse(runtime::http_body(runtime::http_exchange(
    address, runtime::http_request_text("GET", "/v1/models/ctr", "tok-train"))));
  ASSERT_TRUE(described.contains("sync")) << described.dump();
  EXPECT_EQ(described["sync"]["checkpoint"], last["sync_checkpoint"]) << described.dump();
  EXPECT_EQ(described["sync"]["step"], last["rows"]);
  EXPECT_TRUE(std::filesystem::exists(serving.path() + "/sync/ctr/MANIFEST"))
    << "serving keeps the syncs in its own folder";

  // Served predictions are those of the training run's last sync.
  auto probe = probe_rows();
  ASSERT_TRUE(probe);
  std::vector<uint32_t> rows(static_cast<size_t>(probe->labels.rows()));
  std::iota(rows.begin(), rows.end(), 0u);
  auto body = nlohmann::json{{"instances", ops::ctr::ctr_instances(*probe, rows)}}.dump();
  auto served = nlohmann::json::parse(runtime::http_body(runtime::http_exchange(
    address, runtime::http_request_text("POST", "/v1/models/ctr:predict", "tok-train", body))));
  auto reference = ops::estimator::exported_model::load(exported);
  ASSERT_TRUE(reference) << render(reference.error());
  ASSERT_TRUE((*reference)->follow(sync_dir));
  std::vector<size_t> all(rows.begin(), rows.end());
  auto want = (*reference)->predict(ops::estimator::gather(*probe, all));
  ASSERT_TRUE(want) << render(want.error());
  ASSERT_EQ(served["predictions"].size(), rows.size()) << served.dump();
  for (size_t r = 0; r < rows.size(); ++r)
    EXPECT_NEAR(served["predictions"][r][0].get<double>(), (*want)(Eigen::Index(r), 0), 1e-6) << r;
  serve->signal(SIGTERM);
  EXPECT_TRUE(serve->wait(30s));
}

} // namespace
} // namespace darcy::test
