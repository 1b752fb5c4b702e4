// The app-author guide's example, run as the guide runs it: two darcy-logreg nodes on
// loopback, training on the cluster, the trainer killed once and restarted by its supervisor.
#include <csignal>
#include <filesystem>
#include <regex>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/process/process.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

// The losses of every "epoch N on node X: loss L, accuracy A" line, in order.
std::vector<double> epoch_losses(const std::string& out) {
  std::vector<double> losses;
  std::regex line{R"(epoch \d+ on node \S+: loss ([0-9.e+-]+), accuracy)"};
  for (std::sregex_iterator i{out.begin(), out.end(), line}, end; i != end; ++i)
    losses.push_back(std::stod((*i)[1]));
  return losses;
}

TEST(logreg_example, TrainsOnTwoNodesAndSurvivesAKilledTrainer) {
  auto dir = fs::temp_directory_path() / ("darcy_logreg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto data = (dir / "data.tsv").string();
  auto gen = runtime::child_process::start({DARCY_LOGREG, "generate", "--out", data});
  ASSERT_TRUE(gen) << render(gen.error());
  auto generated = gen->wait(std::chrono::seconds(60));
  ASSERT_TRUE(generated && *generated == 0) << gen->read_stderr();

  auto a = runtime::launch_node({DARCY_LOGREG, "node", "--name", "a", "--listen", "127.0.0.1:0"},
                                std::chrono::seconds(30));
  ASSERT_TRUE(a) << render(a.error());
  auto seed = runtime::to_string(a->address);
  auto b = runtime::launch_node(
    {DARCY_LOGREG, "node", "--name", "b", "--listen", "127.0.0.1:0", "--join", seed},
    std::chrono::seconds(30));
  ASSERT_TRUE(b) << render(b.error());

  auto train = runtime::child_process::start({DARCY_LOGREG, "train", "--data", data, "--cluster",
                                              seed, "--trainer-node", "b", "--epochs", "4",
                                              "--kill-trainer-at-epoch", "2"});
  ASSERT_TRUE(train) << render(train.error());
  auto result = train->wait_for_line("\"restarts\"", std::chrono::minutes(2));
  ASSERT_TRUE(result) << render(result.error()) << "\n" << train->read_stderr();
  auto code = train->wait(std::chrono::seconds(30));
  ASSERT_TRUE(code && *code == 0) << train->read_stderr();
  auto out = train->stdout_seen();

  EXPECT_NE(out.find("trainer restarted on node b by its supervisor"), std::string::npos) << out;
  EXPECT_NE(result->find("\"restarts\":1"), std::string::npos) << *result;
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(*result, accuracy, std::regex{R"("accuracy":([0-9.]+))"}));
  EXPECT_GE(std::stod(accuracy[1]), 0.95) << *result;
  // Two epochs before the kill, four after. The restarted trainer starts from the weights its
  // predecessor left in the embedding service: its first epoch beats the first one overall.
  auto losses = epoch_losses(out);
  ASSERT_EQ(losses.size(), 6u) << out;
  EXPECT_LT(losses[2], losses[1]) << out;
  EXPECT_LT(losses[2], losses[0]) << out;

  for (auto* n : {&*b, &*a}) {
    n->process.signal(SIGTERM);
    (void)n->process.wait(std::chrono::seconds(30));
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace darcy::test
