// The versioned export of a retrieval model, as `darcy wals export` writes it and serving loads
// it. MODEL_DIR/<version>/ holds a root sub-model (root/: the config, and what cold-start
// projection needs: the Gramian and the item factors; the user factors and names when known)
// and n shard sub-models (shard-i/: an item partition, its ids and its index, IVF-PQ or a graph).
// The manifest is written last and atomically, with every file's size and checksum, through the one
// checkpoint mechanism (checkpoint_dir); versions beyond the newest `keep` are removed.
//
//   auto version = stores::write_export("EXPORTS/songs", input, 3);
//   auto manifest = stores::read_export_manifest("EXPORTS/songs");   // the newest version
//   auto shard = stores::load_export_shard("EXPORTS/songs", *manifest, 0);  // mapped
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "compute/mips/mips_index.hpp"
#include "compute/shared_array.hpp"
#include "messages/checkpoint.hpp"

namespace darcy::stores {

/// Service name in export manifests.
inline constexpr const char* serving_service_name = "serving";

struct export_config {
  /// The trainer: "wals" or "word2vec".
  std::string kind = "wals";
  /// "dot" (inner product) or "cosine" (rows normalised at export).
  std::string metric = "dot";
  uint64_t items = 0;
  uint64_t users = 0;
  uint32_t dim = 0;
  uint32_t shards = 1;
  /// WALS's projection parameters (cold start): lambda, sigma (unobserved weight), alpha and
  /// its weight function ("identity" or "log1p").
  double lambda = 0;
  double sigma = 0;
  double alpha = 0;
  std::string weight = "log1p";
  /// The shards' index kind (exports written before graphs existed are IVF-PQ).
  compute::mips::mips_index_kind index = compute::mips::mips_index_kind::ivf_pq;
  /// Features trained with the matrix (the paper's U+ and V+): a user's features were extra
  /// columns, an item's extra rows, each entry of value `feature_value`. Exports written before
  /// features were kept have none.
  uint64_t user_features = 0;
  uint64_t item_features = 0;
  double feature_value = 1;
};

struct export_input {
  export_config config; // items, users and dim are taken from the matrices
  compute::row_matrix items;
  compute::row_matrix users;           // may be empty
  std::vector<std::string> item_names; // empty, or one per item
  std::vector<std::string> user_names; // empty, or one per user
  /// The factors of the users' features (columns of V past the items) and of the items'
  /// features (rows of U past the users), each with one name a row; may be empty.
  compute::row_matrix user_features;
  std::vector<std::string> user_feature_names;
  compute::row_matrix item_features;
  std::vector<std::string> item_feature_names;
  /// The shards' index: config.index chooses which of these options apply.
  compute::mips::ivf_pq_options index;
  compute::mips::graph_index_options graph;
  /// Called once every part is written, just before the manifest commits the version
  /// (fault-injection tests stop the writer here).
  std::function<void()> before_commit;
};

/// Writes a new version under `model_dir` and returns its number. Item i goes to shard
/// i % shards, named by id i. The Gramians are over every column WALS trained (the items and the
/// users' features) and, when there are users, every row (the users and the items' features).
/// errc::invalid_argument for 0 shards, more shards than items, a NaN factor, names of another
/// count (features need one each), a feature named twice, factors of another dimension, or an
/// unknown metric; errc::io_error when a file cannot be written (the previous version then stays
/// the newest).
caf::expected<std::string> write_export(const std::string& model_dir, export_input input,
                                        size_t keep);

/// The manifest of `version`, or of the newest version when empty: errc::not_found when there
/// is none, errc::corrupt_file when it is damaged.
caf::expected<checkpoint_manifest> read_export_manifest(const std::string& model_dir,
                                                        const std::string& version = {});

/// The version numbers under `model_dir`, newest first.
std::vector<std::string> export_versions(const std::string& model_dir);

/// The config of `manifest`'s version alone (what a root needs before its shards load).
/// errc::corrupt_file as load_export_root.
caf::expected<export_config> read_export_config(const std::string& model_dir,
                                                const checkpoint_manifest& manifest);

struct export_root {
  export_config config;
  compute::row_matrix gramian; // V^T V over the items and the users' features
  /// U^T U over the users and the items' features, for projecting a new item; empty in an
  /// export without users, or written before items could be added.
  compute::row_matrix user_gramian;
  compute::shared_array<float> items; // config.items x dim
  compute::shared_array<float> users; // config.users x dim
  std::vector<std::string> item_names;
  std::vector<std::string> user_names;
  compute::shared_array<float> user_features; // config.user_features x dim
  compute::shared_array<float> item_features; // config.item_features x dim
  std::vector<std::string> user_feature_names;
  std::vector<std::string> item_feature_names;
};

/// The root sub-model of `manifest`'s version; its large parts are mapped. errc::corrupt_file
/// when a file is missing, damaged or disagrees with the config.
caf::expected<export_root> load_export_root(const std::string& model_dir,
                                            const checkpoint_manifest& manifest);

/// Shard `shard`'s index: IVF-PQ with its items and ids mapped in place, or a graph read into
/// memory. errc::corrupt_file as above; errc::invalid_argument for a shard the export does not
/// have.
caf::expected<compute::mips::mips_index> load_export_shard(const std::string& model_dir,
                                                           const checkpoint_manifest& manifest,
                                                           uint32_t shard);

} // namespace darcy::stores
