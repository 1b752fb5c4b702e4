#include "stores/serving/serving_export.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include <toml++/toml.h>

#include "compute/mips/exact_index.hpp"
#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"
#include "stores/checkpoint/matrix_file.hpp"

namespace darcy::stores {

namespace {

using compute::row_matrix;

template <class T>
std::string_view bytes_of(std::span<const T> values) {
  return {reinterpret_cast<const char*>(values.data()), values.size_bytes()};
}

std::string encode_config(const export_config& c) {
  std::ostringstream out;
  out.precision(17);
  out << "kind = \"" << c.kind << "\"\nmetric = \"" << c.metric << "\"\nitems = " << c.items
      << "\nusers = " << c.users << "\ndim = " << c.dim << "\nshards = " << c.shards
      << "\nlambda = " << c.lambda << "\nsigma = " << c.sigma << "\nalpha = " << c.alpha
      << "\nweight = \"" << c.weight << "\"\nindex = \"" << compute::mips::to_string(c.index)
      << "\"\nuser_features = " << c.user_features << "\nitem_features = " << c.item_features
      << "\nfeature_value = " << c.feature_value << "\n";
  auto text = out.str();
  // TOML floats need a point or an exponent.
  for (auto key : {"lambda", "sigma", "alpha", "feature_value"}) {
    auto at = text.find(std::string{key} + " = ");
    auto end = text.find('\n', at);
    auto value = text.substr(at, end - at);
    if (value.find_first_of(".eEn") == std::string::npos)
      text.insert(end, ".0");
  }
  return text;
}

caf::expected<export_config> decode_config(const std::string& text, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return make_error(errc::corrupt_file, path + ": " + std::string{e.description()});
  }
  export_config c;
  c.kind = t["kind"].value_or(std::string{});
  c.metric = t["metric"].value_or(std::string{});
  c.items = t["items"].value_or(uint64_t{0});
  c.users = t["users"].value_or(uint64_t{0});
  c.dim = t["dim"].value_or(0u);
  c.shards = t["shards"].value_or(0u);
  c.lambda = t["lambda"].value_or(0.0);
  c.sigma = t["sigma"].value_or(0.0);
  c.alpha = t["alpha"].value_or(0.0);
  c.weight = t["weight"].value_or(std::string{});
  c.user_features = t["user_features"].value_or(uint64_t{0});
  c.item_features = t["item_features"].value_or(uint64_t{0});
  c.feature_value = t["feature_value"].value_or(1.0);
  auto index = compute::mips::parse_mips_index_kind(t["index"].value_or(std::string{"ivf_pq"}));
  if (c.dim == 0 || c.shards == 0 || (c.metric != "dot" && c.metric != "cosine") || !index)
    return make_error(errc::corrupt_file,
                      path + ": dim, shards, metric or index missing or invalid");
  c.index = *index;
  return c;
}

std::string names_text(const std::vector<std::string>& names) {
  std::string text;
  for (auto& n : names)
    text += n + "\n";
  return text;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string_view::npos)
      end = text.size();
    lines.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

caf::error invalid(const std::string& what) {
  return make_error(errc::invalid_argument, "export: " + what);
}

caf::error corrupt(const std::string& what) {
  return make_error(errc::corrupt_file, what);
}

const file_info* find_part(const checkpoint_manifest& m, const std::string& rel) {
  for (auto& p : m.parts)
    if (p.path == m.checkpoint + "/" + rel)
      return &p;
  return nullptr;
}

// A part as an array of T, mapped in place.
template <class T>
caf::expected<compute::shared_array<T>> map_array(const checkpoint_dir& dir,
                                                  const checkpoint_manifest& m,
                                                  const std::string& rel, size_t count) {
  auto part = find_part(m, rel);
  if (part == nullptr)
    return corrupt(dir.root() + "/" + m.checkpoint + ": the manifest names no " + rel);
  if (part->bytes != count * sizeof(T))
    return corrupt(dir.root() + "/" + part->path + ": " + std::to_string(part->bytes) +
                   " bytes, the config implies " + std::to_string(count * sizeof(T)));
  auto file = dir.map_part(*part);
  if (!file)
    return std::move(file.error());
  auto bytes = (*file)->bytes();
  return compute::shared_array<T>{{reinterpret_cast<const T*>(bytes.data()), count}, *file};
}

caf::expected<row_matrix> read_matrix_part(const checkpoint_dir& dir, const checkpoint_manifest& m,
                                           const std::string& rel) {
  auto part = find_part(m, rel);
  if (part == nullptr)
    return corrupt(dir.root() + "/" + m.checkpoint + ": the manifest names no " + rel);
  auto bytes = dir.read_part(*part);
  if (!bytes)
    return std::move(bytes.error());
  auto fm = decode_matrix(*bytes, dir.root() + "/" + part->path);
  if (!fm)
    return std::move(fm.error());
  return row_matrix{Eigen::Map<const row_matrix>(
    fm->values.data(), static_cast<Eigen::Index>(fm->rows), static_cast<Eigen::Index>(fm->cols))};
}

float_matrix to_float_matrix(const row_matrix& m) {
  return {static_cast<uint64_t>(m.rows()),
          static_cast<uint64_t>(m.cols()),
          {m.data(), m.data() + m.size()}};
}

/// Writes one part of a version: (path below the version, bytes, rows).
using part_writer = std::function<caf::error(const std::string&, std::string_view, uint64_t)>;

caf::error add_ivf_pq_shard(const part_writer& add, const std::string& prefix,
                            const compute::mips::ivf_pq_parts& p) {
  auto rows = p.ids.size();
  for (auto err :
       {add(prefix + "centroids.f32", encode_matrix(to_float_matrix(p.centroids)), 0),
        add(prefix + "codebooks.f32", encode_matrix(to_float_matrix(p.codebooks)), 0),
        add(prefix + "lists.u64", bytes_of(std::span<const uint64_t>{p.list_offsets}), 0),
        add(prefix + "codes.u8", bytes_of(p.codes.span()), 0),
        add(prefix + "items.f32", bytes_of(p.items.span()), rows),
        add(prefix + "ids.u64", bytes_of(p.ids.span()), rows)})
    if (err)
      return err;
  return {};
}

caf::error add_graph_shard(const part_writer& add, const std::string& prefix,
                           const compute::mips::graph_parts& p) {
  auto rows = p.ids.size();
  std::vector<uint64_t> meta{p.m, p.entry};
  for (auto err :
       {add(prefix + "graph.u64", bytes_of(std::span<const uint64_t>{meta}), 0),
        add(prefix + "items.f32",
            bytes_of(std::span<const float>{p.items.data(), size_t(p.items.size())}), rows),
        add(prefix + "ids.u64", bytes_of(std::span<const uint64_t>{p.ids}), rows),
        add(prefix + "bottom.u32", bytes_of(std::span<const uint32_t>{p.bottom}), rows),
        add(prefix + "upper.u32", bytes_of(std::span<const uint32_t>{p.upper}), 0),
        add(prefix + "levels.u8", bytes_of(std::span<const uint8_t>{p.levels}), rows),
        add(prefix + "codes.i8", bytes_of(std::span<const int8_t>{p.codes}), rows),
        add(prefix + "scales.f32", bytes_of(std::span<const float>{p.code_scales}), 0),
        add(prefix + "last.f32", bytes_of(std::span<const float>{p.exact_last}), 0)})
    if (err)
      return err;
  return {};
}

// A part of any length as a vector of T; errc::corrupt_file when it is no whole number of T.
template <class T>
caf::expected<std::vector<T>> read_array(const checkpoint_dir& dir, const checkpoint_manifest& m,
                                         const std::string& rel) {
  auto part = find_part(m, rel);
  if (part != nullptr && part->bytes % sizeof(T) != 0)
    return corrupt(dir.root() + "/" + part->path + ": not a whole number of values");
  auto values = map_array<T>(dir, m, rel, part ? part->bytes / sizeof(T) : 0);
  if (!values)
    return std::move(values.error());
  return values->to_vector();
}

caf::expected<compute::mips::mips_index> load_graph_shard(const checkpoint_dir& dir,
                                                          const checkpoint_manifest& m,
                                                          const std::string& prefix, size_t rows,
                                                          uint32_t dim) {
  compute::mips::graph_parts p;
  auto meta = read_array<uint64_t>(dir, m, prefix + "graph.u64");
  auto items = map_array<float>(dir, m, prefix + "items.f32", rows * dim);
  auto ids = read_array<uint64_t>(dir, m, prefix + "ids.u64");
  auto bottom = read_array<uint32_t>(dir, m, prefix + "bottom.u32");
  auto upper = read_array<uint32_t>(dir, m, prefix + "upper.u32");
  auto levels = read_array<uint8_t>(dir, m, prefix + "levels.u8");
  auto codes = read_array<int8_t>(dir, m, prefix + "codes.i8");
  auto scales = read_array<float>(dir, m, prefix + "scales.f32");
  auto last = read_array<float>(dir, m, prefix + "last.f32");
  for (auto err :
       {error_of(meta), error_of(items), error_of(ids), error_of(bottom), error_of(upper),
        error_of(levels), error_of(codes), error_of(scales), error_of(last)})
    if (err)
      return err;
  if (meta->size() != 2 || (*meta)[1] > UINT32_MAX)
    return corrupt(dir.root() + "/" + m.checkpoint + "/" + prefix + "graph.u64: not (m, entry)");
  p.m = (*meta)[0];
  p.entry = static_cast<uint32_t>((*meta)[1]);
  p.items = Eigen::Map<const row_matrix>(items->data(), static_cast<Eigen::Index>(rows),
                                         static_cast<Eigen::Index>(dim));
  p.ids = std::move(*ids);
  p.bottom = std::move(*bottom);
  p.upper = std::move(*upper);
  p.levels = std::move(*levels);
  p.codes = std::move(*codes);
  p.code_scales = std::move(*scales);
  p.exact_last = std::move(*last);
  auto index = compute::mips::graph_index::from_parts(std::move(p));
  if (!index)
    return corrupt(dir.root() + "/" + m.checkpoint + "/" + prefix + ": " + render(index.error()));
  return compute::mips::mips_index{std::move(*index)};
}

// The features of `in`: one name each, none named twice, the items' dimension, finite.
caf::error check_features(const export_input& in) {
  for (auto [what, factors, names] :
       {std::tuple{"user", &in.user_features, &in.user_feature_names},
        std::tuple{"item", &in.item_features, &in.item_feature_names}}) {
    auto rows = static_cast<size_t>(factors->rows());
    if (names->size() != rows)
      return invalid(std::to_string(names->size()) + " " + what + " feature names for " +
                     std::to_string(rows) + " " + what + " features");
    if (rows == 0)
      continue;
    if (factors->cols() != in.items.cols())
      return invalid(std::string{what} + " features have dim " + std::to_string(factors->cols()) +
                     ", items " + std::to_string(in.items.cols()));
    if (!factors->allFinite())
      return invalid(std::string{what} + " features hold a NaN or infinite value");
    std::unordered_set<std::string_view> seen;
    for (auto& name : *names)
      if (!seen.insert(name).second)
        return invalid(std::string{what} + " feature '" + name + "' is named twice");
  }
  return {};
}

caf::expected<export_config> read_config(const checkpoint_dir& dir, const checkpoint_manifest& m) {
  auto part = find_part(m, "root/config.toml");
  if (part == nullptr)
    return corrupt(dir.root() + "/" + m.checkpoint + ": the manifest names no root/config.toml");
  auto text = dir.read_part(*part);
  if (!text)
    return std::move(text.error());
  return decode_config(*text, dir.root() + "/" + part->path);
}

} // namespace

caf::expected<export_config> read_export_config(const std::string& model_dir,
                                                const checkpoint_manifest& manifest) {
  return read_config(checkpoint_dir{model_dir}, manifest);
}

caf::expected<std::string> write_export(const std::string& model_dir, export_input in,
                                        size_t keep) {
  auto& c = in.config;
  auto n = static_cast<size_t>(in.items.rows());
  if (c.metric != "dot" && c.metric != "cosine")
    return invalid("unknown metric " + c.metric + " (dot or cosine)");
  if (in.index.exact_last_dim)
    return invalid("an index with an exact last dimension cannot be exported");
  if (c.shards == 0 || c.shards > n)
    return invalid(std::to_string(c.shards) + " shards for " + std::to_string(n) + " items");
  if (!in.item_names.empty() && in.item_names.size() != n)
    return invalid(std::to_string(in.item_names.size()) + " item names for " + std::to_string(n) +
                   " items");
  if (!in.user_names.empty() && in.user_names.size() != static_cast<size_t>(in.users.rows()))
    return invalid(std::to_string(in.user_names.size()) + " user names for " +
                   std::to_string(in.users.rows()) + " users");
  if (in.users.rows() > 0 && in.users.cols() != in.items.cols())
    return invalid("users have dim " + std::to_string(in.users.cols()) + ", items " +
                   std::to_string(in.items.cols()));
  if (auto err = compute::mips::check_items(in.items, {}))
    return invalid(err.context);
  if (auto err = check_features(in))
    return err;
  if (c.metric == "cosine")
    compute::normalise_rows(in.items);
  c.items = n;
  c.users = static_cast<uint64_t>(in.users.rows());
  c.dim = static_cast<uint32_t>(in.items.cols());
  c.user_features = static_cast<uint64_t>(in.user_features.rows());
  c.item_features = static_cast<uint64_t>(in.item_features.rows());
  // A failure before the commit leaves no version behind (the transaction discards it).
  auto t = checkpoint_transaction::begin_version(model_dir);
  if (!t)
    return std::move(t.error());
  auto version = t->id();
  checkpoint_manifest m;
  m.service = serving_service_name;
  m.shard_count = c.shards;
  auto add = [&](const std::string& rel, std::string_view bytes, uint64_t rows) -> caf::error {
    auto part = t->root().write_part(version + "/" + rel, bytes, rows);
    if (!part)
      return std::move(part.error());
    m.parts.push_back(*part);
    return {};
  };
  row_matrix gramian = in.items.transpose() * in.items;
  if (c.user_features > 0)
    gramian += in.user_features.transpose() * in.user_features;
  auto floats = [](const row_matrix& x) {
    return bytes_of(std::span<const float>{x.data(), size_t(x.size())});
  };
  for (auto err : {add("root/config.toml", encode_config(c), 0),
                   add("root/gramian.f32", encode_matrix(to_float_matrix(gramian)), c.dim),
                   add("root/items.f32", floats(in.items), n),
                   add("root/users.f32", floats(in.users), c.users),
                   add("root/item_names.txt", names_text(in.item_names), in.item_names.size()),
                   add("root/user_names.txt", names_text(in.user_names), in.user_names.size())})
    if (err)
      return err;
  if (c.users > 0) {
    row_matrix user_gramian = in.users.transpose() * in.users;
    if (c.item_features > 0)
      user_gramian += in.item_features.transpose() * in.item_features;
    if (auto err =
          add("root/user_gramian.f32", encode_matrix(to_float_matrix(user_gramian)), c.dim))
      return err;
  }
  // Exports without features have no feature parts, as before features were kept.
  for (auto [kind, factors, names] :
       {std::tuple{"user", &in.user_features, &in.user_feature_names},
        std::tuple{"item", &in.item_features, &in.item_feature_names}}) {
    auto rows = static_cast<uint64_t>(factors->rows());
    auto prefix = std::string{"root/"} + kind + "_feature";
    if (rows == 0)
      continue;
    if (auto err = add(prefix + "s.f32", floats(*factors), rows))
      return err;
    if (auto err = add(prefix + "_names.txt", names_text(*names), rows))
      return err;
  }
  for (uint32_t s = 0; s < c.shards; ++s) {
    auto rows = compute::rows_owned(n, s, c.shards);
    row_matrix part(static_cast<Eigen::Index>(rows), in.items.cols());
    std::vector<uint64_t> ids(rows);
    compute::for_each_owned(n, s, c.shards, [&](uint64_t id, uint64_t r) {
      ids[r] = id;
      part.row(static_cast<Eigen::Index>(r)) = in.items.row(static_cast<Eigen::Index>(id));
    });
    auto index =
      compute::mips::mips_index::build(part, std::move(ids), {c.index, in.index, in.graph});
    if (!index)
      return make_error(index.error());
    auto prefix = "shard-" + std::to_string(s) + "/";
    if (auto err = index->graph() ? add_graph_shard(add, prefix, index->graph()->parts())
                                  : add_ivf_pq_shard(add, prefix, index->ivf_pq()->parts()))
      return err;
  }
  if (in.before_commit)
    in.before_commit();
  if (auto err = t->commit(m, keep))
    return err;
  return version;
}

caf::expected<checkpoint_manifest> read_export_manifest(const std::string& model_dir,
                                                        const std::string& version) {
  checkpoint_dir dir{model_dir};
  auto m = version.empty() ? dir.read_manifest() : dir.read_manifest_of(version);
  if (!m)
    return m;
  if (m->service != serving_service_name)
    return corrupt(model_dir + ": not an export (service " + m->service + ")");
  return m;
}

std::vector<std::string> export_versions(const std::string& model_dir) {
  return checkpoint_dir{model_dir}.checkpoints();
}

caf::expected<export_root> load_export_root(const std::string& model_dir,
                                            const checkpoint_manifest& m) {
  checkpoint_dir dir{model_dir};
  export_root root;
  auto config = read_config(dir, m);
  if (!config)
    return std::move(config.error());
  root.config = *config;
  auto& c = root.config;
  auto gramian = read_matrix_part(dir, m, "root/gramian.f32");
  if (!gramian)
    return std::move(gramian.error());
  if (gramian->rows() != c.dim || gramian->cols() != c.dim)
    return corrupt(model_dir + "/" + m.checkpoint + "/root/gramian.f32: not dim x dim");
  root.gramian = std::move(*gramian);
  if (find_part(m, "root/user_gramian.f32") != nullptr) {
    auto user_gramian = read_matrix_part(dir, m, "root/user_gramian.f32");
    if (!user_gramian)
      return std::move(user_gramian.error());
    if (user_gramian->rows() != c.dim || user_gramian->cols() != c.dim)
      return corrupt(model_dir + "/" + m.checkpoint + "/root/user_gramian.f32: not dim x dim");
    root.user_gramian = std::move(*user_gramian);
  }
  auto items = map_array<float>(dir, m, "root/items.f32", c.items * c.dim);
  auto users = map_array<float>(dir, m, "root/users.f32", c.users * c.dim);
  if (!items)
    return std::move(items.error());
  if (!users)
    return std::move(users.error());
  root.items = std::move(*items);
  root.users = std::move(*users);
  for (auto [rel, factors, count] :
       {std::tuple{"root/user_features.f32", &root.user_features, c.user_features},
        std::tuple{"root/item_features.f32", &root.item_features, c.item_features}}) {
    if (count == 0)
      continue;
    auto mapped = map_array<float>(dir, m, rel, count * c.dim);
    if (!mapped)
      return std::move(mapped.error());
    *factors = std::move(*mapped);
  }
  for (auto [rel, names, count] :
       {std::tuple{"root/item_names.txt", &root.item_names, c.items},
        std::tuple{"root/user_names.txt", &root.user_names, c.users},
        std::tuple{"root/user_feature_names.txt", &root.user_feature_names, c.user_features},
        std::tuple{"root/item_feature_names.txt", &root.item_feature_names, c.item_features}}) {
    if (count == 0 && find_part(m, rel) == nullptr)
      continue; // a feature part of an export without features
    auto part = find_part(m, rel);
    if (part == nullptr)
      return corrupt(model_dir + "/" + m.checkpoint + ": the manifest names no " + rel);
    auto text = dir.read_part(*part);
    if (!text)
      return std::move(text.error());
    *names = split_lines(*text);
    if (!names->empty() && names->size() != count)
      return corrupt(model_dir + "/" + part->path + ": " + std::to_string(names->size()) +
                     " names for " + std::to_string(count) + " rows");
  }
  return root;
}

caf::expected<compute::mips::mips_index> load_export_shard(const std::string& model_dir,
                                                           const checkpoint_manifest& m,
                                                           uint32_t shard) {
  checkpoint_dir dir{model_dir};
  auto config = read_config(dir, m);
  if (!config)
    return std::move(config.error());
  if (shard >= config->shards)
    return invalid("shard " + std::to_string(shard) + " of an export of " +
                   std::to_string(config->shards));
  auto prefix = "shard-" + std::to_string(shard) + "/";
  auto rows = compute::rows_owned(config->items, shard, config->shards);
  if (config->index == compute::mips::mips_index_kind::graph)
    return load_graph_shard(dir, m, prefix, rows, config->dim);
  compute::mips::ivf_pq_parts p;
  auto centroids = read_matrix_part(dir, m, prefix + "centroids.f32");
  auto codebooks = read_matrix_part(dir, m, prefix + "codebooks.f32");
  if (!centroids)
    return std::move(centroids.error());
  if (!codebooks)
    return std::move(codebooks.error());
  p.centroids = std::move(*centroids);
  p.codebooks = std::move(*codebooks);
  auto lists =
    map_array<uint64_t>(dir, m, prefix + "lists.u64", static_cast<size_t>(p.centroids.rows()) + 1);
  if (!lists)
    return std::move(lists.error());
  p.list_offsets = lists->to_vector();
  auto codes_part = find_part(m, prefix + "codes.u8");
  auto codes = map_array<uint8_t>(dir, m, prefix + "codes.u8", codes_part ? codes_part->bytes : 0);
  auto items = map_array<float>(dir, m, prefix + "items.f32", rows * config->dim);
  auto ids = map_array<uint64_t>(dir, m, prefix + "ids.u64", rows);
  if (!codes)
    return std::move(codes.error());
  if (!items)
    return std::move(items.error());
  if (!ids)
    return std::move(ids.error());
  p.codes = std::move(*codes);
  p.items = std::move(*items);
  p.ids = std::move(*ids);
  auto index = compute::mips::ivf_pq_index::from_parts(std::move(p));
  if (!index)
    return corrupt(model_dir + "/" + m.checkpoint + "/" + prefix + ": " + render(index.error()));
  return compute::mips::mips_index{std::move(*index)};
}

} // namespace darcy::stores
