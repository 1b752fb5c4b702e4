#include "python/src/table_config.hpp"

#include <map>

#include <pybind11/stl.h>

#include "python/src/errors.hpp"
#include "python/src/store_choice.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

template <class T>
void read(const py::dict& d, const char* field, T& into) {
  if (!d.contains(field))
    return;
  try {
    into = d[field].cast<T>();
  } catch (const py::cast_error&) {
    raise(errc::invalid_argument, std::string{field} + " of the wrong type");
  }
}

template <class Kind>
Kind kind_of(const py::dict& d, const char* what, const std::map<std::string, Kind>& kinds) {
  std::string name;
  read(d, "kind", name);
  auto i = kinds.find(name);
  if (i == kinds.end())
    raise(errc::invalid_argument, std::string{what} + " '" + name + "'");
  return i->second;
}

} // namespace

de_config table_config(const table_options& o) {
  de_config cfg;
  cfg.name = o.name;
  cfg.dim = o.dim;
  cfg.max_batch = o.max_batch;
  cfg.cache_bytes = o.cache_bytes;
  auto& opt = cfg.optimizer;
  // darcy.Rule: a rule by name and its parameters, checked when the shards bind it.
  std::string kind;
  read(o.optimizer, "kind", kind);
  if (kind == "rule") {
    read(o.optimizer, "rule", opt.rule);
    std::map<std::string, float> params;
    read(o.optimizer, "params", params);
    for (auto& [name, value] : params)
      opt.params.push_back({name, value});
  } else {
    opt.kind = kind_of<optimizer_kind>(o.optimizer, "optimizer",
                                       {{"sgd", optimizer_kind::sgd},
                                        {"adagrad", optimizer_kind::adagrad},
                                        {"momentum", optimizer_kind::momentum},
                                        {"adam", optimizer_kind::adam},
                                        {"ftrl", optimizer_kind::ftrl}});
  }
  read(o.optimizer, "learning_rate", opt.learning_rate);
  read(o.optimizer, "initial_accumulator", opt.initial_accumulator);
  read(o.optimizer, "momentum", opt.momentum);
  read(o.optimizer, "nesterov", opt.nesterov);
  read(o.optimizer, "beta1", opt.beta1);
  read(o.optimizer, "beta2", opt.beta2);
  read(o.optimizer, "epsilon", opt.epsilon);
  read(o.optimizer, "l1", opt.l1);
  read(o.optimizer, "l2", opt.l2);
  auto& init = cfg.init;
  init.kind = kind_of<init_kind>(o.initializer, "initializer",
                                 {{"zeros", init_kind::zeros},
                                  {"uniform", init_kind::uniform},
                                  {"normal", init_kind::normal},
                                  {"truncated_normal", init_kind::truncated_normal}});
  read(o.initializer, "low", init.low);
  read(o.initializer, "high", init.high);
  read(o.initializer, "mean", init.mean);
  read(o.initializer, "stddev", init.stddev);
  read(o.initializer, "seed", init.seed);
  auto& adm = cfg.admission;
  adm.kind = kind_of<admission_kind>(o.admission, "admission",
                                     {{"none", admission_kind::none},
                                      {"frequency", admission_kind::frequency},
                                      {"bloom", admission_kind::bloom}});
  read(o.admission, "min_count", adm.min_count);
  read(o.admission, "capacity", adm.capacity);
  read(o.admission, "fp_rate", adm.fp_rate);
  auto& ev = cfg.eviction;
  ev.kind = kind_of<eviction_kind>(o.eviction, "eviction",
                                   {{"none", eviction_kind::none},
                                    {"ttl", eviction_kind::ttl},
                                    {"lfu", eviction_kind::lfu},
                                    {"lru", eviction_kind::lru}});
  read(o.eviction, "ttl_steps", ev.ttl_steps);
  read(o.eviction, "max_rows", ev.max_rows);
  if (!o.sampler.empty()) {
    cfg.sampler.kind = kind_of<sampler_kind>(o.sampler, "sampler",
                                             {{"uniform", sampler_kind::uniform},
                                              {"log_uniform", sampler_kind::log_uniform},
                                              {"unigram", sampler_kind::unigram}});
    read(o.sampler, "power", cfg.sampler.power);
  }
  if (!o.ann.empty()) {
    cfg.ann.enabled = true;
    read(o.ann, "lists", cfg.ann.lists);
    read(o.ann, "probes", cfg.ann.probes);
    read(o.ann, "rerank", cfg.ann.rerank);
    read(o.ann, "refresh_ms", cfg.ann.refresh_ms);
  }
  raise_if(check_store(o.store));
  apply_store(o.store, cfg);
  return cfg;
}

} // namespace darcy::python
