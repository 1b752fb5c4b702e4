#include "actors/embedding_master.hpp"

#include <memory>
#include <unordered_map>

#include "actors/top_k_scan.hpp"
#include "compute/hash.hpp"
#include "compute/optimizer.hpp"
#include "messages/errc.hpp"
#include "stores/de_config.hpp"

namespace darcy::actors {

namespace {

// A batch split by shard: unique keys per shard, and for every input position the shard and
// the row within that shard's reply.
struct split_batch {
  std::vector<std::vector<std::string>> keys;
  std::vector<std::pair<uint32_t, uint32_t>> position;
  /// For updates: summed gradients per shard, in the order of `keys`.
  std::vector<std::vector<float>> grads;
};

split_batch split(const std::vector<std::string>& keys, size_t shard_count) {
  split_batch out;
  out.keys.resize(shard_count);
  out.position.reserve(keys.size());
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> seen;
  seen.reserve(keys.size());
  for (auto& key : keys) {
    auto [it, fresh] = seen.try_emplace(key);
    if (fresh) {
      auto s = static_cast<uint32_t>(shard_of(key, shard_count));
      it->second = {s, static_cast<uint32_t>(out.keys[s].size())};
      out.keys[s].push_back(key);
    }
    out.position.push_back(it->second);
  }
  return out;
}

void sum_gradients(split_batch& batch, const std::vector<float>& grads, size_t dim) {
  batch.grads.resize(batch.keys.size());
  for (size_t s = 0; s < batch.keys.size(); ++s)
    batch.grads[s].assign(batch.keys[s].size() * dim, 0.0f);
  for (size_t k = 0; k < batch.position.size(); ++k) {
    auto [s, row] = batch.position[k];
    auto* dst = batch.grads[s].data() + row * dim;
    auto* src = grads.data() + k * dim;
    for (size_t d = 0; d < dim; ++d)
      dst[d] += src[d];
  }
}

caf::expected<const de_config*> check(embedding_master_pointer self, const std::string& name,
                                      size_t batch) {
  auto i = self->state.configs.find(name);
  if (i == self->state.configs.end())
    return make_error(errc::unknown_embedding, name);
  if (auto err = stores::check_batch(i->second, batch))
    return err;
  return &i->second;
}

// Runs `work` now if an in-flight slot is free, queues it otherwise, or refuses it.
template <class Promise>
void admit(embedding_master_pointer self, Promise promise, std::function<void()> work) {
  auto& st = self->state;
  if (st.in_flight < st.options.max_in_flight) {
    ++st.in_flight;
    work();
  } else if (st.queued.size() < st.options.max_queued) {
    st.queued.push_back(std::move(work));
  } else {
    promise.deliver(make_error(errc::overloaded, std::to_string(st.in_flight) +
                                                   " requests in flight"));
  }
}

// Marks one fan-out done and starts the oldest queued one.
void finished(embedding_master_pointer self) {
  auto& st = self->state;
  --st.in_flight;
  if (!st.queued.empty()) {
    auto next = std::move(st.queued.front());
    st.queued.pop_front();
    ++st.in_flight;
    next();
  }
}

// Sends one request per shard that has keys; calls on_reply(shard, reply) for each answer and
// done(error) once, after the last answer or at the first error.
template <class Reply, class Request, class OnReply>
void fan_out(const split_batch& batch, Request request,
             OnReply on_reply, std::function<void(caf::error)> done) {
  auto pending = std::make_shared<size_t>(0);
  auto failed = std::make_shared<bool>(false);
  for (auto& keys : batch.keys)
    *pending += keys.empty() ? 0 : 1;
  for (size_t s = 0; s < batch.keys.size(); ++s) {
    if (batch.keys[s].empty())
      continue;
    request(s).then(
      [=](Reply& reply) {
        if (*failed)
          return;
        on_reply(s, reply);
        if (--*pending == 0)
          done({});
      },
      [=](caf::error& err) {
        if (*failed)
          return;
        *failed = true;
        done(std::move(err));
      });
  }
}

} // namespace

size_t shard_of(std::string_view key, size_t shard_count) {
  return compute::hash_key(key) % shard_count;
}

embedding_master_actor::behavior_type embedding_master(embedding_master_pointer self,
                                                       embedding_master_options options) {
  self->state.options = std::move(options);
  auto timeout = self->state.options.shard_timeout;
  return {
    [self, timeout](create_atom, const de_config& cfg) -> caf::result<ok_atom> {
      auto promise = self->make_response_promise<ok_atom>();
      auto remaining = std::make_shared<size_t>(self->state.options.shards.size());
      auto failed = std::make_shared<bool>(false);
      for (auto& shard : self->state.options.shards)
        self->request(shard, timeout, create_atom::value, cfg)
          .then(
            [=](ok_atom) mutable {
              if (!*failed && --*remaining == 0) {
                self->state.configs[cfg.name] = cfg;
                promise.deliver(ok_atom::value);
              }
            },
            [=](caf::error& err) mutable {
              if (!*failed) {
                *failed = true;
                promise.deliver(std::move(err));
              }
            });
      return promise;
    },
    [self, timeout](lookup_atom, const std::string& name,
                    const std::vector<std::string>& keys) -> caf::result<std::vector<float>> {
      auto cfg = check(self, name, keys.size());
      if (!cfg)
        return std::move(cfg.error());
      auto dim = (*cfg)->dim;
      auto promise = self->make_response_promise<std::vector<float>>();
      auto batch = std::make_shared<split_batch>(split(keys, self->state.options.shards.size()));
      admit(self, promise, [=]() mutable {
        auto out = std::make_shared<std::vector<float>>(batch->position.size() * dim);
        fan_out<std::vector<float>>(
          *batch,
          [=](size_t s) {
            return self->request(self->state.options.shards[s], timeout, lookup_atom::value,
                                 name, batch->keys[s]);
          },
          [=](size_t s, const std::vector<float>& rows) {
            for (size_t k = 0; k < batch->position.size(); ++k)
              if (batch->position[k].first == s)
                std::copy_n(rows.data() + batch->position[k].second * dim, dim,
                            out->data() + k * dim);
          },
          [=](caf::error err) mutable {
            if (err)
              promise.deliver(std::move(err));
            else
              promise.deliver(std::move(*out));
            finished(self);
          });
      });
      return promise;
    },
    [self, timeout](update_atom, const std::string& name, const std::vector<std::string>& keys,
                    const std::vector<float>& grads, int64_t step) -> caf::result<ok_atom> {
      auto cfg = check(self, name, keys.size());
      if (!cfg)
        return std::move(cfg.error());
      auto dim = (*cfg)->dim;
      if ((*cfg)->read_only)
        return make_error(errc::read_only, "update of embedding '" + name + "'");
      if (grads.size() != keys.size() * dim)
        return make_error(errc::dimension_mismatch,
                          std::to_string(keys.size()) + " keys of dim " + std::to_string(dim) +
                            " need " + std::to_string(keys.size() * dim) +
                            " gradient values, got " + std::to_string(grads.size()));
      if (!compute::all_finite(grads))
        return make_error(errc::non_finite, "gradients for embedding '" + name + "'");
      auto promise = self->make_response_promise<ok_atom>();
      auto batch = std::make_shared<split_batch>(split(keys, self->state.options.shards.size()));
      sum_gradients(*batch, grads, dim);
      admit(self, promise, [=]() mutable {
        fan_out<ok_atom>(
          *batch,
          [=](size_t s) {
            return self->request(self->state.options.shards[s], timeout, update_atom::value,
                                 name, batch->keys[s], batch->grads[s], step);
          },
          [](size_t, ok_atom) {},
          [=](caf::error err) mutable {
            if (err)
              promise.deliver(std::move(err));
            else
              promise.deliver(ok_atom::value);
            finished(self);
          });
      });
      return promise;
    },
    [self, timeout](top_k_atom, const std::string& name, const std::vector<float>& queries,
                    uint32_t k, bool with_bias) -> caf::result<top_k_result> {
      auto i = self->state.configs.find(name);
      if (i == self->state.configs.end())
        return make_error(errc::unknown_embedding, name);
      auto qdim = i->second.dim - (with_bias ? 1u : 0u);
      if (k == 0)
        return make_error(errc::invalid_argument, "top_k needs k >= 1");
      if (qdim == 0 || queries.empty() || queries.size() % qdim != 0)
        return make_error(errc::dimension_mismatch,
                          std::to_string(queries.size()) + " query values for dim " +
                            std::to_string(qdim));
      auto promise = self->make_response_promise<top_k_result>();
      auto& shards = self->state.options.shards;
      auto parts = std::make_shared<std::vector<top_k_result>>(shards.size());
      auto remaining = std::make_shared<size_t>(shards.size());
      auto failed = std::make_shared<bool>(false);
      auto nq = queries.size() / qdim;
      for (size_t s = 0; s < shards.size(); ++s)
        self->request(shards[s], timeout, top_k_atom::value, name, queries, k, with_bias)
          .then(
            [=](top_k_result& part) mutable {
              if (*failed)
                return;
              (*parts)[s] = std::move(part);
              if (--*remaining == 0)
                promise.deliver(merge_top_k_results(*parts, nq, k));
            },
            [=](caf::error& err) mutable {
              if (!*failed) {
                *failed = true;
                promise.deliver(std::move(err));
              }
            });
      return promise;
    },
    [self, timeout](stats_atom, const std::string& name) -> caf::result<embedding_stats> {
      if (self->state.configs.count(name) == 0)
        return make_error(errc::unknown_embedding, name);
      auto promise = self->make_response_promise<embedding_stats>();
      auto total = std::make_shared<embedding_stats>();
      auto remaining = std::make_shared<size_t>(self->state.options.shards.size());
      auto failed = std::make_shared<bool>(false);
      for (auto& shard : self->state.options.shards)
        self->request(shard, timeout, stats_atom::value, name)
          .then(
            [=](const embedding_stats& s) mutable {
              total->rows += s.rows;
              total->bytes += s.bytes;
              total->raw_bytes += s.raw_bytes;
              total->evictions += s.evictions;
              total->dropped_updates += s.dropped_updates;
              if (!*failed && --*remaining == 0)
                promise.deliver(*total);
            },
            [=](caf::error& err) mutable {
              if (!*failed) {
                *failed = true;
                promise.deliver(std::move(err));
              }
            });
      return promise;
    },
  };
}

} // namespace darcy::actors
