// Values of retrieval serving that cross actor and node boundaries: the queries and answers of
// the root and its shards, their health and timings, and the access rules of a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/cluster/request_context.hpp"
#include "messages/wire_blob.hpp"

namespace darcy {

/// What a shard server loads and how it searches; the spawn argument of serving_shard.
struct serving_shard_config {
  /// The model's export folder (EXPORTS/<name>); every node must be able to read it.
  std::string model_dir;
  std::string model;
  std::string version;
  uint32_t shard = 0;
  /// Search parameters (compute::mips::mips_search_options): probes and rerank of an IVF-PQ
  /// index, the beam ef of a graph.
  uint32_t probes = 8;
  uint32_t rerank = 30;
  uint32_t ef = 64;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, serving_shard_config& x) {
  return f(caf::meta::type_name("serving_shard_config"), x.model_dir, x.model, x.version, x.shard,
           x.probes, x.rerank, x.ef);
}

/// One query vector for one shard: its k best items.
struct shard_query {
  request_context context;
  std::vector<float> vector;
  uint32_t k = 10;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_query& x) {
  return f(caf::meta::type_name("shard_query"), x.context, wire::blob(x.vector), x.k);
}

/// A shard's best items, best first: at most k, fewer when the shard holds fewer.
struct shard_hits {
  uint32_t shard = 0;
  std::vector<uint64_t> ids;
  std::vector<float> scores;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_hits& x) {
  return f(caf::meta::type_name("shard_hits"), x.shard, wire::blob(x.ids), wire::blob(x.scores));
}

/// Queries for one shard sent together: the root coalesces the queries that arrive while the
/// shard's previous batch is out (each keeps its own context and k).
struct shard_batch {
  std::vector<shard_query> queries;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_batch& x) {
  return f(caf::meta::type_name("shard_batch"), x.queries);
}

/// The answers to a shard_batch, in its order: answers[i] is valid when errors[i] is empty.
struct shard_batch_hits {
  uint32_t shard = 0;
  std::vector<shard_hits> answers;
  std::vector<caf::error> errors;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_batch_hits& x) {
  return f(caf::meta::type_name("shard_batch_hits"), x.shard, x.answers, x.errors);
}

struct shard_status {
  std::string model;
  std::string version;
  uint32_t shard = 0;
  uint64_t items = 0;
  uint64_t answered = 0;
  /// Queries dropped because their deadline had passed on arrival.
  uint64_t expired = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_status& x) {
  return f(caf::meta::type_name("shard_status"), x.model, x.version, x.shard, x.items, x.answered,
           x.expired);
}

enum class query_kind : uint8_t {
  /// A query vector of the model's dimension.
  vector = 0,
  /// A user the model knows, by name (or by row number when it has no names).
  user = 1,
  /// A new user given as the items they interacted with, their features, or both (cold-start
  /// projection).
  items = 2,
};

/// A request to a model's root.
struct topk_request {
  request_context context;
  query_kind kind = query_kind::vector;
  std::vector<float> vector;
  std::string user;
  std::vector<std::string> items;
  /// One per item, or empty for 1 each.
  std::vector<float> values;
  /// With items, or alone: the new user's features (a WALS model's row features), each of
  /// the value the model was trained with.
  std::vector<std::string> features;
  uint32_t k = 10;
  /// At the deadline, answer with the shards that answered (flagged partial) instead of failing
  /// with errc::deadline_exceeded.
  bool allow_partial = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topk_request& x) {
  return f(caf::meta::type_name("topk_request"), x.context, x.kind, x.vector, x.user, x.items,
           x.values, x.features, x.k, x.allow_partial);
}

struct topk_response {
  std::string version;
  std::vector<uint64_t> ids;
  /// The items' names, or their ids as text when the model has no names.
  std::vector<std::string> names;
  std::vector<float> scores;
  /// True when shards are missing from the answer (see missing_shards).
  bool partial = false;
  std::vector<uint32_t> missing_shards;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topk_response& x) {
  return f(caf::meta::type_name("topk_response"), x.version, x.ids, x.names, x.scores, x.partial,
           x.missing_shards);
}

/// An item a model gains while it serves (WALS's cold start of an item): projected from its
/// features (the items' column features the model trained with), from the users who took it
/// (with one value each, or 1 each when `values` is empty), or both.
struct new_item {
  std::string name;
  std::vector<std::string> features;
  std::vector<std::string> users;
  std::vector<float> values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, new_item& x) {
  return f(caf::meta::type_name("new_item"), x.name, x.features, x.users, x.values);
}

/// Items to add to the live index of the version serving, all or none.
struct add_items_request {
  request_context context;
  std::vector<new_item> items;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, add_items_request& x) {
  return f(caf::meta::type_name("add_items_request"), x.context, x.items);
}

/// The ids the items got, in the request's order, and the shards that hold them.
struct add_items_response {
  std::string version;
  std::vector<uint64_t> ids;
  std::vector<uint32_t> shards;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, add_items_response& x) {
  return f(caf::meta::type_name("add_items_response"), x.version, x.ids, x.shards);
}

/// Items for one shard's live index: ids.size() rows of the model's dimension in `vectors`.
struct shard_items {
  std::vector<uint64_t> ids;
  std::vector<float> vectors;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_items& x) {
  return f(caf::meta::type_name("shard_items"), wire::blob(x.ids), wire::blob(x.vectors));
}

/// Latencies in fixed buckets (Prometheus' cumulative form is derived when rendering).
struct latency_histogram {
  /// Upper bounds in milliseconds; counts has one more entry, for +Inf.
  static constexpr double bounds[] = {0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500};
  std::vector<uint64_t> counts = std::vector<uint64_t>(std::size(bounds) + 1, 0);
  double sum_ms = 0;
  uint64_t count = 0;

  void add(double ms) {
    size_t b = 0;
    while (b < std::size(bounds) && ms > bounds[b])
      ++b;
    ++counts[b];
    sum_ms += ms;
    ++count;
  }

  /// The upper bound of the bucket that holds the q-quantile (0 < q <= 1); 0 when empty, and
  /// twice the last bound when it lies past it.
  double quantile_bound(double q) const {
    if (count == 0)
      return 0;
    uint64_t seen = 0;
    for (size_t b = 0; b < std::size(bounds); ++b)
      if ((seen += counts[b]) >= q * double(count))
        return bounds[b];
    return 2 * bounds[std::size(bounds) - 1];
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_histogram& x) {
  return f(caf::meta::type_name("latency_histogram"), x.counts, x.sum_ms, x.count);
}

/// A shard server as the root sees it.
struct shard_health {
  uint32_t shard = 0;
  std::string node;
  bool up = false;
  uint32_t restarts = 0;
  /// Answers, and failures (errors and answers missing at the deadline).
  uint64_t answered = 0;
  uint64_t failed = 0;
  /// Batches sent (shard_batch); answered / batches is the mean batch.
  uint64_t batches = 0;
  /// Batches (or queries) sent again after an attempt without an answer.
  uint64_t resent = 0;
  /// Round trips from the root, answered ones only.
  latency_histogram latency;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_health& x) {
  return f(caf::meta::type_name("shard_health"), x.shard, x.node, x.up, x.restarts, x.answered,
           x.failed, x.batches, x.resent, x.latency);
}

/// Per-principal accounting of a model: admitted requests and the rows they returned, and every
/// denial by its cause.
struct principal_counters {
  std::string principal;
  uint64_t requests = 0;
  uint64_t rows = 0;
  uint64_t denied_access = 0;
  uint64_t denied_quota = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, principal_counters& x) {
  return f(caf::meta::type_name("principal_counters"), x.principal, x.requests, x.rows,
           x.denied_access, x.denied_quota);
}

enum class model_state : uint8_t {
  /// No version is loaded (or the last one was unloaded).
  unavailable = 0,
  /// The first version is loading; no request is answered yet.
  loading = 1,
  /// A version answers requests (another may be loading behind it).
  available = 2,
};

std::string to_string(model_state x);
std::string to_string(query_kind x);

struct model_status {
  std::string model;
  model_state state = model_state::unavailable;
  /// The version answering requests; empty while none does.
  std::string version;
  /// The version being loaded; empty when none is.
  std::string loading;
  /// Why the last load failed; empty when it did not.
  std::string last_error;
  std::vector<shard_health> shards;
  std::vector<principal_counters> principals;
  /// Orchestration steps of the loads so far, oldest first ("shard 0 of 3 loaded", ...).
  std::vector<std::string> events;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_status& x) {
  return f(caf::meta::type_name("model_status"), x.model, x.state, x.version, x.loading,
           x.last_error, x.shards, x.principals, x.events);
}

/// Who may use a model. "*" in a list admits every principal.
struct model_acl {
  /// May ask for top-k.
  std::vector<std::string> query{"*"};
  /// May load and unload versions, and add items.
  std::vector<std::string> manage{"*"};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_acl& x) {
  return f(caf::meta::type_name("model_acl"), x.query, x.manage);
}

/// A token bucket for the requests of (principal, app); "*" matches any. The first matching
/// rule applies, and each (principal, app) pair gets its own bucket.
struct quota_rule {
  std::string principal = "*";
  std::string app = "*";
  /// Requests per second refilled, and the bucket's size.
  double rate = 0;
  double burst = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, quota_rule& x) {
  return f(caf::meta::type_name("quota_rule"), x.principal, x.app, x.rate, x.burst);
}

struct access_rules {
  model_acl acl;
  /// No matching rule: no limit.
  std::vector<quota_rule> quotas;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, access_rules& x) {
  return f(caf::meta::type_name("access_rules"), x.acl, x.quotas);
}

} // namespace darcy
