#include "actors/embedding/candidate_sampler.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "actors/fan_out.hpp"
#include "compute/hash.hpp"
#include "compute/sampler.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

// The global weights: the table's sampler over every shard's classes, and each shard's share.
struct weight_table {
  compute::row_weights weights;
  /// Each shard's weight, and the whole table's.
  std::vector<double> shard_totals;
  double total = 0;
};

weight_table make_table(const std::vector<sample_stats>& stats) {
  std::map<uint32_t, uint64_t> merged;
  for (auto& s : stats)
    for (size_t i = 0; i < s.classes.size(); ++i)
      merged[s.classes[i]] += s.counts[i];
  std::vector<uint32_t> classes;
  std::vector<uint64_t> counts;
  for (auto [c, count] : merged) {
    classes.push_back(c);
    counts.push_back(count);
  }
  auto sampler = stats.empty() ? sampler_config{} : stats.front().sampler;
  weight_table table{compute::row_weights{sampler, classes, counts}, {}, 0};
  for (auto& s : stats) {
    double w = s.weight;
    if (sampler.kind == sampler_kind::log_uniform) {
      w = 0;
      for (size_t i = 0; i < s.classes.size(); ++i)
        w += table.weights.class_weights()[s.classes[i]] * static_cast<double>(s.counts[i]);
    }
    table.shard_totals.push_back(w);
    table.total += w;
  }
  return table;
}

// Each shard's weight without its positives.
std::vector<double> free_weights(const std::vector<sample_stats>& stats, const weight_table& t) {
  std::vector<double> result;
  for (size_t s = 0; s < stats.size(); ++s) {
    double w = t.shard_totals[s];
    for (auto f : stats[s].positive_freqs)
      w -= t.weights(f);
    result.push_back(std::max(0.0, w));
  }
  return result;
}

} // namespace

candidate_sampler_actor::behavior_type candidate_sampler(candidate_sampler_actor::pointer self,
                                                         candidate_sampler_options options) {
  auto opts = std::make_shared<candidate_sampler_options>(std::move(options));
  return {
    [self, opts](sample_atom, const std::string& name, std::vector<std::string> positives,
                 uint32_t num_sampled, uint64_t seed) -> caf::result<sample_result> {
      std::set<std::string> seen;
      positives.erase(std::remove_if(positives.begin(), positives.end(),
                                     [&](const std::string& p) { return !seen.insert(p).second; }),
                      positives.end());
      auto promise = self->make_response_promise<sample_result>();
      auto shards = opts->shards;
      auto all = std::vector<size_t>(shards.size());
      std::iota(all.begin(), all.end(), 0);
      auto stats = std::make_shared<std::vector<sample_stats>>(shards.size());
      fan_out<sample_stats>(
        all,
        [=](size_t s) {
          return self->request(shards[s], opts->shard_timeout, sample_stats_atom::value, name,
                               positives);
        },
        [stats](size_t s, sample_stats& part) { (*stats)[s] = std::move(part); },
        [=](caf::error err) mutable {
          if (err) {
            promise.deliver(std::move(err));
            return;
          }
          uint64_t rows = 0;
          for (auto& part : *stats)
            for (auto count : part.counts)
              rows += count;
          auto table = make_table(*stats);
          auto shard_weights = free_weights(*stats, table);
          auto free_total = std::accumulate(shard_weights.begin(), shard_weights.end(), 0.0);
          if (num_sampled > 0 && !(free_total > 0)) {
            promise.deliver(make_error(errc::invalid_argument,
                                       "'" + name + "' has no candidate besides the positives"));
            return;
          }
          auto result = std::make_shared<sample_result>();
          result->rows = rows;
          std::map<std::string, double> positive_prob;
          for (auto& s : *stats)
            for (size_t i = 0; i < s.positives.size(); ++i)
              positive_prob[s.positives[i]] =
                table.total > 0 ? table.weights(s.positive_freqs[i]) / table.total : 0.0;
          for (auto& p : positives) {
            auto found = positive_prob.find(p);
            result->keys.push_back(p);
            result->is_positive.push_back(1);
            result->probs.push_back(found == positive_prob.end()
                                      ? absent_positive_prob
                                      : std::max(found->second, absent_positive_prob));
          }
          // Share the negatives out among shards by their free weight (a seeded multinomial).
          std::vector<uint32_t> counts(shards.size(), 0);
          if (num_sampled > 0) {
            std::mt19937_64 rng{seed};
            std::discrete_distribution<size_t> pick(shard_weights.begin(), shard_weights.end());
            for (uint32_t n = 0; n < num_sampled; ++n)
              ++counts[pick(rng)];
          }
          std::vector<size_t> targets;
          for (size_t s = 0; s < shards.size(); ++s)
            if (counts[s] > 0)
              targets.push_back(s);
          auto parts = std::make_shared<std::vector<sample_result>>(shards.size());
          fan_out<sample_result>(
            targets,
            [=](size_t s) {
              sample_plan plan{table.weights.config(),
                               table.weights.class_weights(),
                               table.total,
                               counts[s],
                               compute::mix64(seed, s),
                               positives};
              return self->request(shards[s], opts->shard_timeout, sample_part_atom::value, name,
                                   std::move(plan));
            },
            [parts](size_t s, sample_result& part) { (*parts)[s] = std::move(part); },
            [=](caf::error err) mutable {
              if (err) {
                promise.deliver(std::move(err));
                return;
              }
              for (auto& part : *parts) {
                result->keys.insert(result->keys.end(), part.keys.begin(), part.keys.end());
                result->is_positive.insert(result->is_positive.end(), part.is_positive.begin(),
                                           part.is_positive.end());
                result->probs.insert(result->probs.end(), part.probs.begin(), part.probs.end());
              }
              promise.deliver(std::move(*result));
            });
        });
      return promise;
    },
  };
}

} // namespace darcy::actors
