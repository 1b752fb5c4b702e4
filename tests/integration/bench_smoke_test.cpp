// Every benchmark as a user runs it (`darcy-bench NAME` and each apps/bench/ script), at a tiny
// size and with its peer: each must end with its JSON line and the ratio it exists for, so
// that a benchmark that can no longer finish fails `make test`. A peer whose package is missing
// skips its test, naming the package (python3-faiss, python3-torch and python3-gensim are not
// among the packages scripts/deps.sh installs).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/node_process.hpp"
#include "tests/support/genre_corpus.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// The reason to skip when Debian's python cannot import `module`, else empty.
std::string missing_module(const std::string& module, const std::string& package) {
  auto command = "/usr/bin/python3 -c 'import " + module + "' >/dev/null 2>&1";
  if (std::system(command.c_str()) == 0)
    return {};
  return "the peer needs " + module + ": apt-get install " + package;
}

/// The reason to skip when `program` is not on PATH, else empty.
std::string missing_program(const std::string& program, const std::string& package) {
  auto command = "command -v " + program + " >/dev/null 2>&1";
  if (std::system(command.c_str()) == 0)
    return {};
  return program + " is missing: apt-get install " + package;
}

/// The metrics of the run's last line, which must be {"bench": bench, "metrics": {...}}, after
/// an exit status of 0.
nlohmann::json metrics_of(const cli_result& run, const std::string& bench) {
  EXPECT_EQ(run.exit_code, 0) << "stderr:\n" << run.err << "\nstdout:\n" << run.out;
  auto last = run.out.substr(run.out.find_last_of('\n', run.out.size() - 2) + 1);
  auto line = nlohmann::json::parse(last, nullptr, false);
  if (!line.is_object() || line.value("bench", "") != bench || !line["metrics"].is_object()) {
    ADD_FAILURE() << "no {\"bench\":\"" << bench << "\"} line at the end of:\n"
                  << run.out << "\nstderr:\n"
                  << run.err;
    return nlohmann::json::object();
  }
  return line["metrics"];
}

/// Each of `keys` is a finite number above 0 in `metrics`.
void expect_positive(const nlohmann::json& metrics, const std::vector<std::string>& keys) {
  for (auto& key : keys) {
    auto it = metrics.find(key);
    ASSERT_TRUE(it != metrics.end() && it->is_number()) << key << " missing in " << metrics.dump();
    auto x = it->get<double>();
    EXPECT_TRUE(std::isfinite(x) && x > 0) << key << " = " << x;
  }
}

/// Fashion-MNIST's four IDX files, gzipped, with `train` and `test` random 28 x 28 images of
/// labels 0..9, under `dir`.
void write_tiny_fashion_mnist(const std::string& dir, uint32_t train, uint32_t test) {
  fs::create_directories(dir);
  std::mt19937 rng{7};
  auto be32 = [](std::ofstream& out, uint32_t x) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.put(static_cast<char>((x >> shift) & 0xff));
  };
  for (auto [name, n] : {std::pair{"train", train}, std::pair{"t10k", test}}) {
    auto images = dir + "/" + name + "-images-idx3-ubyte";
    auto labels = dir + "/" + name + "-labels-idx1-ubyte";
    {
      std::ofstream img{images, std::ios::binary}, lab{labels, std::ios::binary};
      be32(img, 0x803);
      be32(img, n);
      be32(img, 28);
      be32(img, 28);
      be32(lab, 0x801);
      be32(lab, n);
      for (uint32_t i = 0; i < n; ++i) {
        auto label = static_cast<uint8_t>(rng() % 10);
        lab.put(static_cast<char>(label));
        // A class-dependent band of bright pixels, so that a model has something to learn.
        for (uint32_t p = 0; p < 784; ++p)
          img.put(static_cast<char>(p / 78 == label ? 200 + rng() % 56 : rng() % 60));
      }
    }
    ASSERT_EQ(std::system(("gzip -f '" + images + "' '" + labels + "'").c_str()), 0);
  }
}

TEST(bench_smoke, online_against_the_export_never_synced) {
  temp_dir tmp{"bench_online"};
  auto m = metrics_of(run_bench({"online", "--seconds", "4", "--window", "1000", "--sync-every",
                                 "0.5", "--dense-sync-every", "1", "--qps", "20", "--instances",
                                 "4", "--dir", tmp.path() + "/work", "--quiet"}),
                      "online");
  expect_positive(m, {"freshness_p50_s", "freshness_p99_s", "qps", "syncs", "dense_syncs",
                      "served_auc", "frozen_auc", "p99_ms_without_syncs"});
  EXPECT_EQ(m.value("failed_requests", -1), 0) << m.dump();
  EXPECT_TRUE(m["online_auc_lift"].is_number()) << m.dump();
  EXPECT_TRUE(m["delta_vs_full_bytes"].is_number()) << m.dump();
}

TEST(bench_smoke, messaging_against_plain_tcp) {
  auto m = metrics_of(run_bench({"messaging", "--count-1k", "200", "--count-256k", "20",
                                 "--latency-count", "100", "--repetitions", "1"}),
                      "messaging");
  expect_positive(m, {"remote_vs_tcp_1k", "remote_vs_tcp_256k"});
}

TEST(bench_smoke, embedding_against_a_dense_gather) {
  auto m = metrics_of(
    run_bench({"embedding", "--keys", "20000", "--dim", "8", "--batch", "256", "--batches", "8",
               "--shards", "2", "--leveldb-keys", "2000", "--repetitions", "1"}),
    "embedding");
  expect_positive(m, {"store_vs_dense", "service_vs_dense", "direct_vs_dense", "remote_vs_dense",
                      "leveldb_cold_rows_s", "rule_update_vs_builtin", "adagrad_bytes_per_row",
                      "rowwise_adagrad_bytes_per_row"});
  // Row-wise Adagrad keeps 1 float of state a row where Adagrad keeps 16.
  EXPECT_LT(m["rowwise_adagrad_bytes_per_row"].get<double>(),
            m["adagrad_bytes_per_row"].get<double>());
}

TEST(bench_smoke, sampling_on_tables_of_two_sizes_in_memory_and_on_leveldb_and_a_live_ann) {
  test::temp_dir tmp{"bench_sampling"};
  auto m =
    metrics_of(run_bench({"sampling", "--rows",          "2000,20000", "--dim",
                          "8",        "--batch",         "8",          "--num-sampled",
                          "32",       "--calls",         "5",          "--dir",
                          tmp.path(), "--live-ann-rows", "50000",      "--ann-queries",
                          "10",       "--ann-probes",    "4,100000",   "--ann-update-seconds",
                          "1"}),
               "sampling");
  expect_positive(
    m, {"sample_ms_memory_2000", "sample_ms_memory_20000", "sample_cost_10m_vs_10k",
        "sample_ms_leveldb_20000", "sample_cost_10m_vs_10k_leveldb", "live_ann_recall_at_10",
        "live_ann_vs_exact", "live_ann_vs_faiss", "faiss_rebuild_s"});
}

TEST(bench_smoke, redis_against_redis_benchmark) {
  for (auto [program, package] :
       {std::pair{"redis-server", "redis-server"}, std::pair{"redis-benchmark", "redis-tools"}})
    if (auto why = missing_program(program, package); !why.empty())
      GTEST_SKIP() << why;
  auto m =
    metrics_of(run_bench({"redis", "--rows", "2000", "--dim", "8", "--batch", "32", "--batches",
                          "20", "--repetitions", "1", "--peer-requests", "2000"}),
               "redis");
  expect_positive(m, {"redis_vs_redis_benchmark", "darcy_rows_s", "cached_rows_s"});
}

TEST(bench_smoke, wals_against_the_plain_eigen_loop_and_on_two_node_processes) {
  std::vector<std::string> tiny{"wals",  "--rows", "3000", "--cols",  "2000", "--nnz",
                                "30000", "--dim",  "8",    "--iters", "2"};
  auto local = tiny;
  local.insert(local.end(), {"--chol-iters", "1", "--lastfm", "/nonexistent"});
  expect_positive(metrics_of(run_bench(local), "wals"), {"actors_vs_local", "cg_gflops"});
  auto cluster = tiny;
  cluster.push_back("--cluster");
  auto m = metrics_of(run_bench(cluster), "wals");
  expect_positive(m, {"cluster_vs_local"});
  EXPECT_EQ(m.value("bit_identical", 0), 1) << m.dump();
}

TEST(bench_smoke, wals_scale_reads_blocks_from_disk_on_two_nodes_against_a_smaller_run) {
  temp_dir tmp{"bench_smoke_wals_scale"};
  std::vector<std::string> args = {DARCY_BENCH_BINARY, "wals", "--scale", "--dim", "8"};
  for (auto [option, value] : {std::pair{"--scale-rows", "3000"},
                               {"--scale-cols", "2000"},
                               {"--scale-nnz", "60000"},
                               {"--ref-rows", "1000"},
                               {"--ref-cols", "800"},
                               {"--ref-nnz", "10000"}})
    args.insert(args.end(), {option, value});
  args.insert(args.end(), {"--dir", tmp.path()});
  auto m = metrics_of(run_program(args, 170s), "wals");
  expect_positive(m, {"scale_vs_1m", "scale_entries_per_core_s", "ref_entries_per_core_s",
                      "scale_peak_rss_gib", "scale_disk_bytes_per_entry"});
  EXPECT_GT(m["scale_nnz"].get<uint64_t>(), 50000u) << m.dump();
  auto sides = fs::path{tmp.path()} / "csr-3000x2000-60000";
  ASSERT_TRUE(fs::exists(sides / "rows.csr") && fs::exists(sides / "cols.csr"));
  for (auto& entry : fs::directory_iterator{sides})
    EXPECT_NE(entry.path().filename().string().rfind("checkpoints-", 0), 0u)
      << entry.path() << ": the run's checkpoints are removed";
}

TEST(bench_smoke, mips_against_faiss_and_hnswlib_reaches_recall_0_9_on_every_set) {
  for (auto [module, package] :
       {std::pair{"faiss", "python3-faiss"}, std::pair{"hnswlib", "python3-hnswlib"}})
    if (auto why = missing_module(module, package); !why.empty())
      GTEST_SKIP() << why;
  temp_dir tmp{"bench_smoke_mips"};
  write_tiny_fashion_mnist(tmp.path() + "/fashion", 600, 120);
  auto run = run_program({DARCY_BENCH_BINARY,
                          "mips",
                          "--items",
                          "2000",
                          "--dim",
                          "16",
                          "--queries-b1",
                          "20",
                          "--batches-b256",
                          "1",
                          "--fashion-mnist",
                          tmp.path() + "/fashion",
                          "--ann-thresholds",
                          "0",
                          "--ann-list-factors",
                          "1",
                          "--ann-probes",
                          "1,8,40",
                          "--ann-rerank",
                          "0,200",
                          "--faiss-list-factors",
                          "1",
                          "--point-seconds",
                          "0.01",
                          "--hnswlib-ms",
                          "8",
                          "--graph-ms",
                          "8"},
                         150s);
  auto m = metrics_of(run, "mips");
  ASSERT_TRUE(m["sets"].is_object()) << m.dump();
  EXPECT_EQ(m["sets"].size(), 2u) << m.dump();
  for (auto& [name, set] : m["sets"].items()) {
    SCOPED_TRACE(name);
    expect_positive(set, {"exact_vs_faiss_b1", "exact_vs_faiss_b256", "ann_vs_faiss_at_r90",
                          "ann_vs_hnswlib_at_r90"});
  }
  // Every FAISS family ran, the re-ranking IVF-PQ included (FAISS 1.7.3 does not unwrap it).
  EXPECT_NE(run.out.find("IVF-PQ"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("darcy-graph-M8"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("\"skipped\""), std::string::npos) << run.out;
}

TEST(bench_smoke, moe_against_pytorch) {
  if (auto why = missing_module("torch", "python3-torch"); !why.empty())
    GTEST_SKIP() << why;
  auto m = metrics_of(run_program({DARCY_BENCH_BINARY, "moe", "--tokens", "64", "--dim", "16",
                                   "--experts", "4", "--steps", "1"},
                                  150s),
                      "moe");
  expect_positive(m, {"moe_vs_torch", "moe_vs_dense_flops"});
}

TEST(bench_smoke, moe_gpu_against_pytorch_on_the_gpu) {
  if (!fs::exists("/dev/nvidia0"))
    GTEST_SKIP() << "no GPU (/dev/nvidia0): the GPU benchmark runs where one is";
  auto m = metrics_of(run_program({DARCY_BENCH_BINARY, "moe-gpu", "--tokens", "256", "--dim", "32",
                                   "--experts", "4", "--steps", "2", "--cpu-steps", "1"},
                                  150s),
                      "moe_gpu");
  EXPECT_FALSE(m.empty());
}

TEST(bench_smoke, estimator_against_pytorch_with_its_scaling_runs) {
  if (auto why = missing_module("torch", "python3-torch"); !why.empty())
    GTEST_SKIP() << why;
  temp_dir tmp{"bench_smoke_estimator"};
  write_tiny_fashion_mnist(tmp.path() + "/fashion", 512, 128);
  write_genre_corpus(tmp.path() + "/brown", 40);
  auto m =
    metrics_of(run_program({DARCY_BENCH_BINARY, "estimator", "--data", tmp.path() + "/fashion",
                            "--repeats", "1", "--epochs", "1", "--corpus", tmp.path() + "/brown",
                            "--scaling-steps", "40", "--scaling-repeats", "1"},
                           170s),
               "estimator");
  expect_positive(m, {"dnn_vs_torch", "test_accuracy", "scaling_2_workers"});
}

TEST(bench_smoke, ctr_against_pytorchs_dlrm_and_a_hashed_logistic_regression) {
  if (auto why = missing_module("torch", "python3-torch"); !why.empty())
    GTEST_SKIP() << why;
  temp_dir tmp{"bench_smoke_ctr"};
  auto m =
    metrics_of(run_program({DARCY_BENCH_BINARY, "ctr", "--rows", "3000", "--test-rows", "1000",
                            "--max-ids", "50", "--dir", tmp.path(), "--embedding-dim", "4",
                            "--bottom", "8,4", "--top", "8", "--cluster-steps", "40"},
                           170s),
               "ctr");
  expect_positive(
    m, {"ctr_vs_torch", "bayes_auc", "darcy_dlrm_auc", "darcy_wide_deep_auc", "torch_dlrm_auc",
        "torch_hashed_auc", "lr_auc", "cluster_examples_per_s", "cluster_auc", "cluster_vs_local",
        "rule_auc", "rule_bytes_per_row", "dlrm_bytes_per_row"});
  for (auto* key : {"auc_vs_torch", "auc_gap_to_bayes", "rule_auc_vs_adagrad"})
    EXPECT_TRUE(m.contains(key) && m[key].is_number()) << key << " in " << m.dump();
  // Row-wise Adagrad, the default --compare-rule, keeps 1 float of state a row, not dim (4);
  // at this size the tables' 2 MiB chunks are most of their bytes, so the two may be equal.
  EXPECT_LE(m["rule_bytes_per_row"].get<double>(), m["dlrm_bytes_per_row"].get<double>());
}

TEST(bench_smoke, ctr_colossal_keeps_more_rows_than_its_budget_holds_and_compares_with_memory) {
  temp_dir tmp{"bench_smoke_ctr_colossal"};
  // 1 MB of memory tiers over 52 databases (26 tables of 2 shards): 16 rows each, the least a
  // tier holds.
  std::vector<std::string> args = {DARCY_BENCH_BINARY, "ctr", "--no-quality", "--colossal"};
  for (auto [option, value] : {std::pair{"--colossal-rows", "2000"},
                               {"--colossal-test-rows", "500"},
                               {"--memory-budget", "1000000"},
                               {"--memory-rows", "1000"},
                               {"--colossal-shards", "2"},
                               {"--embedding-dim", "4"},
                               {"--bottom", "8,4"},
                               {"--top", "8"}})
    args.insert(args.end(), {option, value});
  args.insert(args.end(), {"--dir", tmp.path()});
  auto m = metrics_of(run_program(args, 170s), "ctr");
  expect_positive(m, {"colossal_keys", "colossal_stored_vs_budget", "colossal_peak_rss_gib",
                      "colossal_vs_memory", "colossal_auc", "memory_examples_per_s"});
  EXPECT_GT(m["colossal_stored_vs_budget"].get<double>(), 10) << m.dump();
  EXPECT_FALSE(m.contains("ctr_vs_torch")) << "--no-quality skips the peers";
}

/// An apps/bench/ script run with `env` (NAME=VALUE entries) and DARCY set; a script that
/// exits 77 skips the test with what it printed.
cli_result run_script(const std::string& script, std::vector<std::string> env,
                      std::chrono::seconds timeout = 170s) {
  std::vector<std::string> argv{"/usr/bin/env", std::string{"DARCY="} + DARCY_BINARY};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {"bash", std::string{DARCY_SOURCE_DIR} + "/apps/bench/" + script});
  return run_program(argv, timeout);
}

TEST(bench_smoke, serve_script_against_the_indexes_called_directly) {
  for (auto [program, package] :
       {std::pair{"wrk", "wrk"}, std::pair{"curl", "curl"}, std::pair{"bc", "bc"}})
    if (auto why = missing_program(program, package); !why.empty())
      GTEST_SKIP() << why;
  temp_dir tmp{"bench_smoke_serve"};
  auto trained = run_darcy({"wals", "train", "--synthetic-rows", "2000", "--synthetic-cols", "1500",
                            "--synthetic-nnz", "20000", "--dim", "8", "--iters", "2", "--quiet",
                            "--out", tmp.path() + "/model"});
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  auto m = metrics_of(run_script("serve.sh", {"MODEL=" + tmp.path() + "/model", "SECONDS_RUN=1",
                                              "DIRECT_SECONDS=1", "CONNECTIONS=4"}),
                      "serve");
  expect_positive(m, {"serve_vs_direct", "serve_vs_direct_c16", "serve_qps"});
  EXPECT_EQ(m.value("failed_requests", -1), 0) << m.dump();
}

TEST(bench_smoke, tls_script_against_plain_tcp) {
  auto m = metrics_of(run_script("tls.sh", {"RUNS=1", "DIM=8", "BATCH=32", "STEPS=2"}), "tls");
  expect_positive(m, {"tls_vs_plain"});
}

TEST(bench_smoke, word2vec_script_against_word2vec_c_and_gensim) {
  if (auto why = missing_module("gensim", "python3-gensim"); !why.empty())
    GTEST_SKIP() << why;
  temp_dir tmp{"bench_smoke_word2vec"};
  write_genre_corpus(tmp.path() + "/brown", 40);
  fs::create_directories(tmp.path() + "/data");
  auto run =
    run_script("word2vec.sh", {"WORK=" + tmp.path() + "/work", "DATA=" + tmp.path() + "/data",
                               "BROWN=" + tmp.path() + "/brown", "EPOCHS=1", "NO_INSTALL=1"});
  if (run.exit_code == 77)
    GTEST_SKIP() << run.err;
  auto m = metrics_of(run, "word2vec");
  expect_positive(m, {"darcy_vs_w2vc", "darcy_vs_gensim", "darcy_remote_vs_w2vc"});
}

TEST(bench_smoke, word2vec_chaos_script_against_a_clean_run) {
  temp_dir tmp{"bench_smoke_word2vec_chaos"};
  fs::create_directories(tmp.path() + "/eval");
  {
    std::ofstream corpus{tmp.path() + "/corpus.txt"};
    std::mt19937 rng{3};
    const char* words[] = {"king", "queen", "man", "woman", "car", "road", "tree", "leaf"};
    for (int line = 0; line < 400; ++line) {
      for (int w = 0; w < 12; ++w)
        corpus << words[(line % 4) * 2 + rng() % 2] << ' ';
      corpus << '\n';
    }
    std::ofstream sim{tmp.path() + "/eval/wordsim353.tsv"};
    sim << "# Word 1\tWord 2\tHuman (mean)\nking\tqueen\t8.5\nman\twoman\t8.3\ncar\troad\t7.0\n"
           "tree\tleaf\t7.5\nking\tcar\t1.2\nqueen\ttree\t0.9\n";
  }
  auto m = metrics_of(
    run_script("word2vec_chaos.sh", {"DATA=" + tmp.path(), "CORPUS=" + tmp.path() + "/corpus.txt",
                                     "EPOCHS=1", "DROP=0.05", "RETRY_MS=200"}),
    "word2vec_chaos");
  expect_positive(m, {"slowdown", "clean_s", "disrupted_s"});
}

} // namespace
} // namespace darcy::test
