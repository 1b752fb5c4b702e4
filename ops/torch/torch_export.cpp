#include "ops/torch/torch_export.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"

namespace darcy::ops {

namespace {

constexpr const char* torch_export_service = "darcy.torch_export";
constexpr const char* spec_format = "darcy.torch_export";

caf::error bad_spec(const std::string& why) {
  return make_error(errc::corrupt_file, "a PyTorch export's spec: " + why);
}

caf::expected<std::vector<int64_t>> shape_of(const nlohmann::json& j, const std::string& what) {
  if (!j.is_array())
    return bad_spec(what + " has no shape");
  std::vector<int64_t> out;
  for (auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1)
      return bad_spec(what + " has a dimension that is not a positive integer");
    out.push_back(d.get<int64_t>());
  }
  return out;
}

caf::expected<torch_slot> slot_of(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("module") || !j["module"].is_string() || !j.contains("pools") ||
      !j["pools"].is_array() || j["pools"].empty())
    return bad_spec("a slot without a module or pools");
  torch_slot slot;
  slot.module = j["module"].get<std::string>();
  for (auto& p : j["pools"]) {
    if (!p.is_object() || !p.contains("feature") || !p["feature"].is_string() ||
        !p.contains("table") || !p["table"].is_string() || !p.contains("dim") ||
        !p["dim"].is_number_integer() || p["dim"].get<int64_t>() < 1 || !p.contains("pooling") ||
        !p["pooling"].is_string())
      return bad_spec("slot " + slot.module + " has a pool without feature, table, dim or pooling");
    auto pooling = p["pooling"].get<std::string>();
    if (pooling != "sum" && pooling != "mean")
      return bad_spec("pooling '" + pooling + "'; sum or mean");
    slot.pools.push_back({p["feature"].get<std::string>(), p["table"].get<std::string>(),
                          static_cast<size_t>(p["dim"].get<int64_t>()), pooling == "mean"});
  }
  return slot;
}

/// A new version under `root` with parts `module` and `spec` (checked) and a manifest of
/// `service` naming them, not committed: the transaction discards the version unless it is.
struct module_version {
  stores::checkpoint_transaction t;
  checkpoint_manifest m;
};

caf::expected<module_version> begin_module_version(const std::string& root, std::string_view module,
                                                   const std::string& spec, const char* service);

/// The module and spec parts of `m` under `root`; errors name `where`.
caf::error read_module_parts(const stores::checkpoint_dir& root, const checkpoint_manifest& m,
                             const std::string& where, std::string& module, torch_spec& spec);

} // namespace

size_t torch_slot::width() const {
  size_t w = 0;
  for (auto& p : pools)
    w += p.dim;
  return w;
}

size_t torch_dense_input::size() const {
  size_t n = 1;
  for (auto d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

caf::expected<torch_spec> parse_torch_spec(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("format", "") != spec_format)
    return bad_spec("not a darcy.torch_export spec");
  if (j.value("version", 0) != 1)
    return bad_spec("version " + j.value("version", nlohmann::json{}).dump() +
                    "; this build reads 1");
  torch_spec spec;
  if (!j.contains("dense") || !j["dense"].is_array() || !j.contains("slots") ||
      !j["slots"].is_array() || j["slots"].empty())
    return bad_spec("no dense inputs or no slots");
  std::set<std::string> names;
  for (auto& d : j["dense"]) {
    if (!d.is_object() || !d.contains("name") || !d["name"].is_string())
      return bad_spec("a dense input without a name");
    auto name = d["name"].get<std::string>();
    auto shape = shape_of(d.value("shape", nlohmann::json{}), "dense input " + name);
    if (!shape)
      return std::move(shape.error());
    if (!names.insert(name).second)
      return bad_spec("the name " + name + " twice");
    spec.dense.push_back({name, std::move(*shape)});
  }
  for (auto& s : j["slots"]) {
    auto slot = slot_of(s);
    if (!slot)
      return std::move(slot.error());
    for (auto& p : slot->pools)
      if (!names.insert(p.feature).second)
        return bad_spec("the name " + p.feature + " twice");
    spec.slots.push_back(std::move(*slot));
  }
  auto output = shape_of(j.value("output", nlohmann::json::array()), "the output");
  if (!output)
    return std::move(output.error());
  spec.output = std::move(*output);
  return spec;
}

bool is_torch_export(const std::string& dir) {
  auto manifest = stores::checkpoint_dir{dir}.read_manifest();
  return manifest && manifest->service == torch_export_service;
}

caf::expected<std::string> write_torch_export(session& s, const std::string& dir,
                                              std::string_view module, const std::string& spec,
                                              size_t keep) {
  auto v = begin_module_version(dir, module, spec, torch_export_service);
  if (!v)
    return std::move(v.error());
  auto version = v->t.id();
  auto tables = version + "/embeddings";
  if (auto err = save(s, dir + "/" + tables, {}))
    return err;
  v->m.extra = nlohmann::json{{"embeddings", tables}}.dump();
  if (auto err = v->t.commit(v->m, std::max<size_t>(keep, 1)))
    return err;
  return version;
}

caf::expected<torch_export> read_torch_export(const std::string& dir, const std::string& version) {
  stores::checkpoint_dir root{dir};
  auto manifest = version.empty() ? root.read_manifest() : root.read_manifest_of(version);
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->service != torch_export_service || manifest->parts.size() != 2)
    return make_error(errc::invalid_config, dir + " holds no PyTorch export");
  torch_export out;
  out.version = manifest->checkpoint;
  if (auto err = read_module_parts(root, *manifest, dir, out.module, out.spec))
    return err;
  auto extra = nlohmann::json::parse(manifest->extra, nullptr, false);
  if (!extra.is_object() || !extra.contains("embeddings") || !extra["embeddings"].is_string())
    return make_error(errc::corrupt_file, dir + ": the export names no tables' checkpoint");
  out.embeddings = dir + "/" + extra["embeddings"].get<std::string>();
  return out;
}

bool same_inputs(const torch_spec& a, const torch_spec& b) {
  auto same_pool = [](const torch_pool& x, const torch_pool& y) {
    return x.feature == y.feature && x.table == y.table && x.dim == y.dim && x.mean == y.mean;
  };
  auto same_slot = [&](const torch_slot& x, const torch_slot& y) {
    return std::equal(x.pools.begin(), x.pools.end(), y.pools.begin(), y.pools.end(), same_pool);
  };
  auto same_dense = [](const torch_dense_input& x, const torch_dense_input& y) {
    return x.name == y.name && x.shape == y.shape;
  };
  return a.output == b.output &&
         std::equal(a.dense.begin(), a.dense.end(), b.dense.begin(), b.dense.end(), same_dense) &&
         std::equal(a.slots.begin(), a.slots.end(), b.slots.begin(), b.slots.end(), same_slot);
}

caf::expected<std::string> write_torch_dense_sync(const std::string& sync_dir,
                                                  std::string_view module, const std::string& spec,
                                                  int64_t step) {
  auto v = begin_module_version(sync_dir + "/dense", module, spec, torch_dense_sync_service);
  if (!v)
    return std::move(v.error());
  v->m.step = step;
  if (auto err = v->t.commit(v->m, 2))
    return err;
  return v->t.id();
}

caf::expected<torch_dense_sync> read_torch_dense_sync(const std::string& sync_dir) {
  stores::checkpoint_dir root{sync_dir + "/dense"};
  auto manifest = root.read_manifest();
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->service != torch_dense_sync_service || manifest->parts.size() != 2)
    return make_error(errc::invalid_config, sync_dir + "/dense holds no PyTorch dense sync");
  torch_dense_sync out;
  out.version = manifest->checkpoint;
  out.step = manifest->step;
  if (auto err = read_module_parts(root, *manifest, sync_dir + "/dense", out.module, out.spec))
    return err;
  return out;
}

namespace {

caf::expected<module_version> begin_module_version(const std::string& root, std::string_view module,
                                                   const std::string& spec, const char* service) {
  if (auto parsed = parse_torch_spec(spec); !parsed)
    return make_error(errc::invalid_argument, render(parsed.error()));
  auto t = stores::checkpoint_transaction::begin_version(root);
  if (!t)
    return std::move(t.error());
  auto version = t->id();
  auto module_part = t->root().write_part(version + "/module.pt", module);
  if (!module_part)
    return std::move(module_part.error());
  auto spec_part = t->root().write_part(version + "/spec.json", spec);
  if (!spec_part)
    return std::move(spec_part.error());
  checkpoint_manifest m;
  m.service = service;
  m.parts = {*module_part, *spec_part};
  return module_version{std::move(*t), std::move(m)};
}

caf::error read_module_parts(const stores::checkpoint_dir& root, const checkpoint_manifest& m,
                             const std::string& where, std::string& module, torch_spec& spec) {
  auto bytes = root.read_part(m.parts[0]);
  if (!bytes)
    return std::move(bytes.error());
  module = std::move(*bytes);
  auto text = root.read_part(m.parts[1]);
  if (!text)
    return std::move(text.error());
  auto parsed = parse_torch_spec(*text);
  if (!parsed)
    return make_error(errc::corrupt_file, where + ": " + render(parsed.error()));
  spec = std::move(*parsed);
  return {};
}

} // namespace

} // namespace darcy::ops
