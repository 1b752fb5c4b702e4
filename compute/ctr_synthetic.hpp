// A seeded generator of Criteo-format click data with no memory of its own: row i is a function
// of (seed, i) alone. Each categorical field draws ids from a Zipf law over its cardinality in
// the Kaggle or Terabyte profile, plus a share of fresh ids never drawn before; the label comes
// from a planted logistic teacher whose per-id weights are drawn from the id's hash, so every
// row's true click probability is known (the Bayes-optimal score).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "messages/errc.hpp"

namespace darcy::compute {

inline constexpr size_t ctr_int_fields = 13;
inline constexpr size_t ctr_cat_fields = 26;

enum class ctr_profile : uint8_t {
  /// The Kaggle display-advertising challenge's cardinalities per field.
  kaggle,
  /// The Terabyte set's, capped at 40M ids per field as DLRM's --max-ind-range and MLPerf do.
  terabyte,
};

/// Distinct ids per categorical field, in field order.
std::span<const uint64_t> ctr_cardinalities(ctr_profile profile);

struct ctr_generator_options {
  ctr_profile profile = ctr_profile::kaggle;
  /// The share of categorical values that are fresh: an id no earlier row drew.
  double fresh_rate = 0;
  uint64_t seed = 1;
  /// The Zipf exponent of every field's id distribution.
  double zipf_exponent = 1.1;
  /// The mean click probability the teacher's bias is calibrated to.
  double click_rate = 0.25;
  /// Caps every field's cardinality (0: the profile's as they are): a small set that a test
  /// learns in seconds, with the same teacher.
  uint64_t max_ids = 0;
  /// Drift: the teacher's per-id weights of the first half of the categorical fields are drawn
  /// anew for each phase (0 is the teacher of a stream without drift); the rows' features do
  /// not depend on it.
  uint64_t teacher_phase = 0;
};

/// errc::invalid_config naming the option: a fresh rate outside [0, 1], an exponent that is
/// not above 0 or equals 1, a click rate outside (0, 1).
plain_error validate(const ctr_generator_options& o);

/// One generated row. A missing integer or categorical value has present[i] false.
struct ctr_synthetic_row {
  bool label = false;
  /// The teacher's click probability for this row.
  double probability = 0;
  std::array<int64_t, ctr_int_fields> ints{};
  std::array<bool, ctr_int_fields> int_present{};
  /// The 32-bit id a Criteo file writes as 8 hex digits; distinct ids of a field stay distinct.
  std::array<uint32_t, ctr_cat_fields> cats{};
  std::array<bool, ctr_cat_fields> cat_present{};
};

class ctr_generator {
public:
  /// Precondition: validate(o) passed. Calibrates the teacher's bias on a seeded sample.
  explicit ctr_generator(ctr_generator_options o);

  ctr_synthetic_row row(uint64_t index) const;

  const ctr_generator_options& options() const { return options_; }
  double bias() const { return bias_; }

  /// The teacher's logit of a row, without the bias.
  double logit(const ctr_synthetic_row& r) const;

private:
  /// The row's values, without label and probability.
  ctr_synthetic_row features(uint64_t index) const;
  /// What the teacher's phase adds to the seed of field `field`'s per-id weights.
  uint64_t drift_of(size_t field) const;

  ctr_generator_options options_;
  std::vector<uint64_t> cardinalities_;
  double bias_ = 0;
};

/// "kaggle" or "terabyte".
std::string to_string(ctr_profile p);

} // namespace darcy::compute
