#include "stores/embedding/cached_rows.hpp"

#include <algorithm>
#include <string>

#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

memory_store_options cache_options(const de_config& cfg) {
  memory_store_options opts;
  opts.dim = cfg.dim;
  opts.init = cfg.init;
  opts.optimizer = cfg.optimizer;
  opts.default_value = cfg.default_value;
  return opts;
}

caf::error check_lookup(const de_config& cfg, size_t keys, std::span<const float> out) {
  if (out.size() != keys * cfg.dim)
    return make_error(errc::dimension_mismatch, std::to_string(keys) + " keys of dim " +
                                                  std::to_string(cfg.dim) + " need " +
                                                  std::to_string(keys * cfg.dim) + " floats");
  return {};
}

caf::error check_update(const de_config& cfg, size_t keys, std::span<const float> grads) {
  if (cfg.read_only)
    return make_error(errc::read_only, "update");
  if (grads.size() != keys * cfg.dim)
    return make_error(errc::dimension_mismatch,
                      std::to_string(keys) + " keys of dim " + std::to_string(cfg.dim) + " need " +
                        std::to_string(keys * cfg.dim) + " gradient values");
  if (!compute::all_finite(grads))
    return make_error(errc::non_finite, "gradients");
  return {};
}

void fill_from_cache(memory_store& cache, const de_config& cfg,
                     std::span<const std::string_view> keys, std::span<float> out,
                     const std::function<void(size_t, const row_ref&)>& cached) {
  for (size_t k = 0; k < keys.size(); ++k) {
    auto dest = out.subspan(k * cfg.dim, cfg.dim);
    if (auto row = cache.find(keys[k])) {
      std::copy(row->values.begin(), row->values.end(), dest.begin());
      cached(k, *row);
    } else if (cfg.read_only && !cfg.default_value.empty()) {
      std::copy(cfg.default_value.begin(), cfg.default_value.end(), dest.begin());
    } else {
      compute::initialize_row(cfg.init, compute::hash_key(keys[k]), dest);
    }
  }
}

size_t gather_present(std::span<const std::string_view> keys, std::span<const float> grads,
                      size_t dim, const std::function<bool(size_t)>& present,
                      std::vector<std::string_view>& kept, std::vector<float>& kept_grads) {
  size_t dropped = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!present(k)) {
      ++dropped;
      continue;
    }
    kept.push_back(keys[k]);
    kept_grads.insert(kept_grads.end(), grads.begin() + static_cast<std::ptrdiff_t>(k * dim),
                      grads.begin() + static_cast<std::ptrdiff_t>((k + 1) * dim));
  }
  return dropped;
}

} // namespace darcy::stores
