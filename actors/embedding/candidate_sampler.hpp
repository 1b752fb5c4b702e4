// The candidate sampler: draws negatives for sampled softmax from an embedding's rows, which
// live on many shards. Samples are shared out among the shards by their metadata (frequency
// histograms), so the result follows one global distribution over all rows.
#pragma once

#include <chrono>
#include <vector>

#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::actors {

struct candidate_sampler_options {
  std::vector<embedding_shard_actor> shards;
  std::chrono::milliseconds shard_timeout{30000};
};

/// A positive absent from the table gets this probability instead of 0, so that its
/// log-probability correction stays finite.
inline constexpr double absent_positive_prob = 1e-12;

candidate_sampler_actor::behavior_type candidate_sampler(candidate_sampler_actor::pointer self,
                                                         candidate_sampler_options options);

} // namespace darcy::actors
