#include "apps/bench/mips_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string_view>

#include "apps/bench/mips_ann.hpp"
#include "apps/bench/peer_scripts.hpp"
#include "compute/mips/exact_index.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/matrix_file.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;
using compute::row_matrix;

double seconds_after(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

// Factors whose norms vary: a Gaussian direction times a log-normal length.
row_matrix synthetic_factors(uint64_t rows, uint32_t dim, uint64_t seed, double norm_sigma) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> gauss;
  row_matrix m(static_cast<Eigen::Index>(rows), dim);
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      m(r, c) = gauss(rng);
    auto length = std::exp(norm_sigma * gauss(rng)) / std::sqrt(static_cast<double>(dim));
    m.row(r) *= static_cast<float>(length);
  }
  return m;
}

// An idx3-ubyte.gz image file as one row of pixel values per image.
caf::expected<row_matrix> read_idx_images(const std::string& path) {
  if (!std::filesystem::exists(path))
    return make_error(errc::not_found, path);
  auto pipe = popen(("gzip -dc '" + path + "'").c_str(), "r");
  if (pipe == nullptr)
    return make_error(errc::io_error, "cannot run gzip on " + path);
  unsigned char header[16];
  auto be32 = [&](int at) {
    return (uint32_t{header[at]} << 24) | (uint32_t{header[at + 1]} << 16) |
           (uint32_t{header[at + 2]} << 8) | uint32_t{header[at + 3]};
  };
  if (std::fread(header, 1, 16, pipe) != 16 || be32(0) != 0x803) {
    pclose(pipe);
    return make_error(errc::corrupt_file, path + ": not an idx3-ubyte image file");
  }
  auto n = be32(4), pixels = be32(8) * be32(12);
  std::vector<unsigned char> bytes(size_t{n} * pixels);
  auto got = std::fread(bytes.data(), 1, bytes.size(), pipe);
  pclose(pipe);
  if (got != bytes.size())
    return make_error(errc::corrupt_file, path + ": truncated");
  row_matrix m(n, pixels);
  for (size_t i = 0; i < bytes.size(); ++i)
    m.data()[i] = bytes[i];
  return m;
}

// Nearest neighbours by L2 as MIPS: [q, 1] . [x, -|x|^2 / 2] = q.x - |x|^2 / 2, whose largest
// value is the smallest |q - x|^2.
void augment_for_l2(row_matrix& items, row_matrix& queries) {
  auto d = items.cols();
  row_matrix xi(items.rows(), d + 1), xq(queries.rows(), d + 1);
  xi.leftCols(d) = items;
  xi.col(d) = -0.5f * items.rowwise().squaredNorm();
  xq.leftCols(d) = queries;
  xq.col(d).setOnes();
  items = std::move(xi);
  queries = std::move(xq);
}

struct peer_figures {
  double b1_qps = 0;
  double b256_qps = 0;
  std::vector<int64_t> ids; // its batch-1 answers, k per query
};

caf::expected<peer_figures> run_faiss(const mips_bench_options& o, const mips_dataset& d,
                                      const std::string& dir) {
  auto items = dir + "/items.f32", queries = dir + "/queries.f32", ids = dir + "/ids.i64";
  if (auto err = write_raw(items, d.items))
    return err;
  if (auto err = write_raw(queries, d.queries))
    return err;
  std::ostringstream args;
  args << items << " " << d.items.rows() << " " << d.items.cols() << " " << queries << " "
       << d.queries.rows() << " " << d.metric << " " << o.k << " " << o.queries_b1 << " "
       << o.batches_b256 << " " << o.threads << " " << ids;
  auto lines = run_python(o.python, peers::mips_faiss_exact_py, args.str(), dir);
  if (!lines)
    return std::move(lines.error());
  auto last = lines->empty() ? std::string{} : lines->back();
  peer_figures f;
  if (std::sscanf(last.c_str(), "{\"b1_qps\": %lf, \"b256_qps\": %lf}", &f.b1_qps, &f.b256_qps) !=
      2)
    return make_error(errc::corrupt_file, "unexpected FAISS output: " + last);
  f.ids.resize(size_t{o.queries_b1} * o.k);
  std::ifstream in{ids, std::ios::binary};
  in.read(reinterpret_cast<char*>(f.ids.data()),
          static_cast<std::streamsize>(f.ids.size() * sizeof(int64_t)));
  if (!in)
    return make_error(errc::corrupt_file, ids + ": short");
  std::filesystem::remove(items);
  std::filesystem::remove(queries);
  return f;
}

struct figures {
  double b1_qps = 0;
  double b256_qps = 0;
  double faiss_b1_qps = 0;
  double faiss_b256_qps = 0;
  /// Share of FAISS's batch-1 top-k ids that the exact index also returned (ties aside, 1).
  double agreement = 0;
  ann_figures ann;
};

// The exact index on `d`, and FAISS on `peer` (the same vectors, or d's before the L2
// augmentation).
caf::expected<figures> measure(const mips_bench_options& o, const mips_dataset& d,
                               const mips_dataset& peer_data, const std::string& dir) {
  auto index = compute::mips::exact_index::make(d.items);
  if (!index)
    return make_error(index.error());
  figures f;
  std::vector<std::vector<compute::hit>> answers;
  auto start = clock::now();
  for (uint32_t q = 0; q < o.queries_b1; ++q) {
    row_matrix query = d.queries.row(q);
    auto hits = index->search(query, o.k, o.threads);
    if (!hits)
      return make_error(hits.error());
    answers.push_back(std::move((*hits)[0]));
  }
  f.b1_qps = o.queries_b1 / seconds_after(start);
  start = clock::now();
  for (uint32_t b = 0; b < o.batches_b256; ++b) {
    auto first = (Eigen::Index{b} * 256) % d.queries.rows();
    row_matrix batch =
      d.queries.middleRows(first, std::min<Eigen::Index>(256, d.queries.rows() - first));
    if (auto hits = index->search(batch, o.k, o.threads); !hits)
      return make_error(hits.error());
  }
  f.b256_qps = o.batches_b256 * 256.0 / seconds_after(start);
  auto peer = run_faiss(o, peer_data, dir);
  if (!peer)
    return std::move(peer.error());
  f.faiss_b1_qps = peer->b1_qps;
  f.faiss_b256_qps = peer->b256_qps;
  size_t same = 0;
  for (uint32_t q = 0; q < o.queries_b1; ++q)
    for (auto& h : answers[q])
      for (uint32_t i = 0; i < o.k; ++i)
        same += static_cast<uint64_t>(peer->ids[size_t{q} * o.k + i]) == h.id;
  f.agreement = static_cast<double>(same) / (static_cast<double>(o.queries_b1) * o.k);
  if (!o.ann)
    return f;
  auto truth = index->search(d.queries, o.k, o.threads);
  if (!truth)
    return make_error(truth.error());
  auto ann = measure_ann(o, d, peer_data, *truth, dir);
  if (!ann)
    return std::move(ann.error());
  f.ann = std::move(*ann);
  return f;
}

void print_sweep(const ann_figures& a) {
  std::printf("  %-26s %-24s %10s %9s\n", "index", "config", "qps", "recall@k");
  for (auto* side : {&a.darcy, &a.faiss, &a.hnswlib})
    for (const auto& p : *side)
      std::printf("  %-26s %-24s %10.1f %9.4f\n", p.index.c_str(), p.config.c_str(), p.qps,
                  p.recall);
  for (auto* best : {&a.best_darcy, &a.best_faiss, &a.best_hnswlib})
    std::printf("  best at recall >= 0.9: %s %s, %.1f qps, recall %.4f\n", best->index.c_str(),
                best->config.c_str(), best->qps, best->recall);
}

/// One dataset's figures as JSON members (no braces): exact search against FAISS's flat
/// index, and with the sweep, the fastest point of each side at recall@k >= 0.9 and the ratios
/// ann_vs_faiss_at_r90 and ann_vs_hnswlib_at_r90 (0 when either side never reached 0.9).
std::string set_metrics(const mips_bench_options& o, const std::string& name, Eigen::Index items,
                        Eigen::Index dim, const figures& f) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "\"dataset\":\"%s\",\"items\":%lld,\"dim\":%lld,\"k\":%u,\"threads\":%u,"
                "\"exact_qps_b1\":%.1f,\"faiss_qps_b1\":%.1f,\"exact_qps_b256\":%.1f,"
                "\"faiss_qps_b256\":%.1f,\"exact_vs_faiss_b1\":%.3f,"
                "\"exact_vs_faiss_b256\":%.3f,\"exact_agreement\":%.4f",
                name.c_str(), static_cast<long long>(items), static_cast<long long>(dim), o.k,
                o.threads, f.b1_qps, f.faiss_b1_qps, f.b256_qps, f.faiss_b256_qps,
                f.b1_qps / f.faiss_b1_qps, f.b256_qps / f.faiss_b256_qps, f.agreement);
  std::string json = buf;
  if (!o.ann)
    return json;
  auto& a = f.ann;
  auto both = a.best_darcy.qps > 0 && a.best_faiss.qps > 0;
  std::snprintf(buf, sizeof buf,
                ",\"ann_qps\":%.1f,\"ann_config\":\"%s %s\",\"faiss_ann_qps\":%.1f,"
                "\"faiss_ann_index\":\"%s %s\",\"faiss_ann_recall\":%.4f,"
                "\"ann_build_s\":%.1f,\"ann_vs_faiss_at_r90\":%.3f,"
                "\"ann_recall_at_10\":%.4f",
                a.best_darcy.qps, a.best_darcy.index.c_str(), a.best_darcy.config.c_str(),
                a.best_faiss.qps, a.best_faiss.index.c_str(), a.best_faiss.config.c_str(),
                a.best_faiss.recall, a.best_darcy.build_s,
                both ? a.best_darcy.qps / a.best_faiss.qps : 0.0, a.best_darcy.recall);
  json += buf;
  auto hnsw = a.best_darcy.qps > 0 && a.best_hnswlib.qps > 0;
  std::snprintf(buf, sizeof buf,
                ",\"hnswlib_ann_qps\":%.1f,\"hnswlib_ann_index\":\"%s %s\","
                "\"hnswlib_ann_recall\":%.4f,\"ann_vs_hnswlib_at_r90\":%.3f",
                a.best_hnswlib.qps, a.best_hnswlib.index.c_str(), a.best_hnswlib.config.c_str(),
                a.best_hnswlib.recall, hnsw ? a.best_darcy.qps / a.best_hnswlib.qps : 0.0);
  return json + buf;
}

} // namespace

caf::error run_mips_bench(const mips_bench_options& o) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // the sweeps take minutes: show them as they go
  for (std::string_view rest = o.faiss_families; !rest.empty();) {
    auto family = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), family.size() + 1));
    static constexpr std::string_view known[] = {"all",       "none", "ivf-flat",    "ivf-pq",
                                                 "ivf-pq4fs", "hnsw", "l2-ivf-flat", "l2-hnsw"};
    if (std::find(std::begin(known), std::end(known), family) == std::end(known)) {
      return make_error(errc::invalid_argument,
                        "unknown FAISS family '" + std::string{family} +
                          "' (all, none, ivf-flat, ivf-pq, ivf-pq4fs, hnsw, l2-ivf-flat, l2-hnsw)");
    }
  }
  if (o.ann && (o.ann_thresholds.empty() || o.ann_list_factors.empty() || o.ann_probes.empty() ||
                o.ann_rerank.empty())) {
    return make_error(
      errc::invalid_argument,
      "the sweep needs at least one threshold, list factor, probe count and re-rank depth");
  }
  if (auto err = require_optimized_blas())
    return err;
  auto blas = blas_in_use();
  if (std::system((o.python + " -c 'import faiss' 2>/dev/null").c_str()) != 0) {
    return make_error(errc::unavailable,
                      "the peer needs FAISS: apt-get install python3-faiss (and "
                      "dataset-fashion-mnist for the second dataset)");
  }
  auto dir =
    (std::filesystem::temp_directory_path() / ("darcy-bench-mips-" + std::to_string(::getpid())))
      .string();
  std::filesystem::create_directories(dir);
  std::vector<mips_dataset> datasets;
  if (o.factors.empty()) {
    datasets.push_back({"synthetic-factors", "ip", synthetic_factors(o.items, o.dim, 1, 0.5),
                        synthetic_factors(o.queries_b1 + 256, o.dim, 2, 0.0)});
  } else {
    auto v = stores::read_matrix_file(o.factors);
    if (!v) {
      return v.error();
    }
    row_matrix items = Eigen::Map<row_matrix>(v->values.data(), static_cast<Eigen::Index>(v->rows),
                                              static_cast<Eigen::Index>(v->cols));
    // Queries: users' factors (U.f32 beside V.f32), as recommending sends them; without
    // them, other items' factors, as a "more like this" request sends them.
    auto users =
      stores::read_matrix_file((std::filesystem::path{o.factors}.parent_path() / "U.f32").string());
    auto& from = users && users->cols == v->cols ? *users : *v;
    std::printf("queries: %s factors\n", &from == &*v ? "item" : "user");
    std::mt19937_64 rng{3};
    row_matrix queries(o.queries_b1 + 256, items.cols());
    for (Eigen::Index q = 0; q < queries.rows(); ++q)
      queries.row(q) = Eigen::Map<const Eigen::RowVectorXf>(
        from.values.data() + (rng() % from.rows) * from.cols, items.cols());
    datasets.push_back({"wals-factors", "ip", std::move(items), std::move(queries)});
  }
  auto train = read_idx_images(o.fashion_mnist + "/train-images-idx3-ubyte.gz");
  auto test = read_idx_images(o.fashion_mnist + "/t10k-images-idx3-ubyte.gz");
  if (train && test) {
    datasets.push_back({"fashion-mnist-784", "l2", std::move(*train), std::move(*test)});
  } else {
    std::printf("fashion-mnist: skipped (%s)\n",
                render(train ? test.error() : train.error()).c_str());
  }
  std::printf("%-20s %8s %5s %12s %12s %12s %12s %9s\n", "dataset", "items", "dim", "b1_qps",
              "faiss_b1", "b256_qps", "faiss_b256", "agree@k");
  std::string json, sets;
  for (auto& d : datasets) {
    auto raw_dim = d.items.cols();
    auto figures_of = [&]() -> caf::expected<figures> {
      if (d.metric == "ip")
        return measure(o, d, d, dir);
      // FAISS gets the raw vectors for IndexFlatL2; the exact index the augmented ones.
      mips_dataset augmented{d.name, "ip", d.items, d.queries};
      augment_for_l2(augmented.items, augmented.queries);
      return measure(o, augmented, d, dir);
    };
    auto f = figures_of();
    if (!f) {
      std::filesystem::remove_all(dir);
      return with_step(d.name, f.error());
    }
    std::printf("%-20s %8lld %5lld %12.1f %12.1f %12.1f %12.1f %9.4f\n", d.name.c_str(),
                static_cast<long long>(d.items.rows()), static_cast<long long>(raw_dim), f->b1_qps,
                f->faiss_b1_qps, f->b256_qps, f->faiss_b256_qps, f->agreement);
    if (o.ann)
      print_sweep(f->ann);
    auto set_json = set_metrics(o, d.name, d.items.rows(), raw_dim, *f);
    if (json.empty())
      json = set_json; // the first set's figures stay at the top level
    sets += (sets.empty() ? "\"" : ",\"") + d.name + "\":{" + set_json + "}";
  }
  std::filesystem::remove_all(dir);
  std::printf("{\"bench\":\"mips\",\"metrics\":{%s,\"sets\":{%s},\"blas\":\"%s\"}}\n", json.c_str(),
              sets.c_str(), std::filesystem::path{blas}.parent_path().filename().c_str());
  return {};
}

} // namespace darcy::apps
