#include "ops/torch/torch_inputs.hpp"

#include <cmath>
#include <map>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"

namespace darcy::ops {

namespace {

caf::error bad(size_t i, const std::string& field, const std::string& why) {
  return make_error(errc::invalid_argument,
                    "instance " + std::to_string(i) + ", '" + field + "': " + why);
}

/// The key of a JSON id: an integer's decimal digits, or a string as it is.
caf::expected<std::string> key_of(const nlohmann::json& v) {
  if (v.is_number_integer())
    return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>())
                                  : std::to_string(v.get<int64_t>());
  if (v.is_string())
    return v.get<std::string>();
  return make_error(errc::invalid_argument, "an id is an integer or a string");
}

caf::error read_dense(size_t i, const torch_dense_input& d, const nlohmann::json& v,
                      std::vector<float>& into) {
  auto one = [&](const nlohmann::json& x) -> caf::error {
    if (!x.is_number() || !std::isfinite(x.get<double>()))
      return bad(i, d.name, "a value that is not a finite number");
    into.push_back(x.get<float>());
    return {};
  };
  if (!v.is_array())
    return d.size() == 1 ? one(v) : bad(i, d.name, "a number where a list is expected");
  if (v.size() != d.size())
    return bad(i, d.name, std::to_string(v.size()) + " values, not " + std::to_string(d.size()));
  for (auto& x : v)
    if (auto err = one(x))
      return err;
  return {};
}

caf::error read_keys(size_t i, const std::string& feature, const nlohmann::json& v,
                     std::vector<std::string>& into) {
  if (!v.is_array()) {
    auto key = key_of(v);
    if (!key)
      return bad(i, feature, render(key.error()));
    into.push_back(std::move(*key));
    return {};
  }
  for (auto& x : v) {
    auto key = key_of(x);
    if (!key)
      return bad(i, feature, render(key.error()));
    into.push_back(std::move(*key));
  }
  return {};
}

} // namespace

caf::expected<torch_batch> read_torch_instances(const torch_spec& spec,
                                                const nlohmann::json& instances) {
  if (!instances.is_array())
    return make_error(errc::invalid_argument, "instances are a list of objects");
  if (instances.empty())
    return make_error(errc::empty_batch, "a predict request needs at least one instance");
  torch_batch b;
  b.instances = instances.size();
  b.dense.resize(spec.dense.size());
  std::vector<const torch_pool*> pools;
  for (auto& slot : spec.slots)
    for (auto& p : slot.pools)
      pools.push_back(&p);
  b.keys.assign(pools.size(), std::vector<std::vector<std::string>>(b.instances));
  for (size_t i = 0; i < instances.size(); ++i) {
    auto& instance = instances[i];
    if (!instance.is_object())
      return make_error(errc::invalid_argument,
                        "instance " + std::to_string(i) + " is not an object");
    size_t found = 0;
    for (size_t d = 0; d < spec.dense.size(); ++d) {
      auto at = instance.find(spec.dense[d].name);
      if (at == instance.end())
        return bad(i, spec.dense[d].name, "missing (a dense input of the model)");
      if (auto err = read_dense(i, spec.dense[d], *at, b.dense[d]))
        return err;
      ++found;
    }
    for (size_t p = 0; p < pools.size(); ++p) {
      auto at = instance.find(pools[p]->feature);
      if (at == instance.end())
        return bad(i, pools[p]->feature, "missing (a feature of the model)");
      if (auto err = read_keys(i, pools[p]->feature, *at, b.keys[p][i]))
        return err;
      ++found;
    }
    if (found != instance.size())
      for (auto& [field, value] : instance.items()) {
        bool known = false;
        for (auto& d : spec.dense)
          known = known || d.name == field;
        for (auto* p : pools)
          known = known || p->feature == field;
        if (!known)
          return bad(i, field, "not an input of the model");
      }
  }
  return b;
}

void append_instances(torch_batch& into, torch_batch&& more) {
  if (into.instances == 0) {
    into = std::move(more);
    return;
  }
  into.instances += more.instances;
  for (size_t d = 0; d < into.dense.size(); ++d)
    into.dense[d].insert(into.dense[d].end(), more.dense[d].begin(), more.dense[d].end());
  for (size_t p = 0; p < into.keys.size(); ++p)
    for (auto& k : more.keys[p])
      into.keys[p].push_back(std::move(k));
}

caf::expected<std::vector<std::vector<float>>> pool_slots(session& s, const torch_spec& spec,
                                                          const std::vector<de_config>& configs,
                                                          const torch_batch& b) {
  // Each table once in the request: its keys, pool after pool, instance after instance.
  std::vector<table_lookup> request;
  std::map<std::string, size_t> table_at;
  std::vector<std::pair<size_t, size_t>> where; // per pool: table index, its first key there
  for (auto& slot : spec.slots)
    for (auto& p : slot.pools) {
      auto at = table_at.find(p.table);
      if (at == table_at.end()) {
        const de_config* config = nullptr;
        for (auto& c : configs)
          if (c.name == p.table)
            config = &c;
        if (!config)
          return make_error(errc::unknown_embedding, p.table + " (feature " + p.feature +
                                                       "): not among the export's tables");
        if (config->dim != p.dim)
          return make_error(errc::dimension_mismatch, p.table + " has rows of " +
                                                        std::to_string(config->dim) + ", not " +
                                                        std::to_string(p.dim));
        at = table_at.emplace(p.table, request.size()).first;
        request.push_back({config, p.table, {}, {}});
      }
      auto& keys = request[at->second].keys;
      where.emplace_back(at->second, keys.size());
      for (auto& instance : b.keys[where.size() - 1])
        keys.insert(keys.end(), instance.begin(), instance.end());
    }
  std::vector<matrix> rows(request.size());
  std::vector<size_t> nonempty;
  std::vector<table_lookup> asked;
  for (size_t t = 0; t < request.size(); ++t)
    if (!request[t].keys.empty()) {
      nonempty.push_back(t);
      asked.push_back(std::move(request[t]));
    }
  if (!asked.empty()) {
    auto found = dynamic_embedding_lookup(s, std::move(asked), false);
    if (!found)
      return std::move(found.error());
    for (size_t k = 0; k < nonempty.size(); ++k)
      rows[nonempty[k]] = std::move(found->rows[k]);
  }
  std::vector<std::vector<float>> out;
  size_t pool = 0;
  for (auto& slot : spec.slots) {
    auto width = slot.width();
    std::vector<float> values(b.instances * width, 0.0f);
    size_t column = 0;
    for (auto& p : slot.pools) {
      auto [t, next] = where[pool];
      for (size_t i = 0; i < b.instances; ++i) {
        auto count = b.keys[pool][i].size();
        float* into = values.data() + i * width + column;
        for (size_t k = 0; k < count; ++k, ++next)
          for (size_t c = 0; c < p.dim; ++c)
            into[c] += rows[t](static_cast<Eigen::Index>(next), static_cast<Eigen::Index>(c));
        if (p.mean && count > 1)
          for (size_t c = 0; c < p.dim; ++c)
            into[c] /= static_cast<float>(count);
      }
      column += p.dim;
      ++pool;
    }
    out.push_back(std::move(values));
  }
  return out;
}

} // namespace darcy::ops
