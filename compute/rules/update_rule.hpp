// An update rule of embedding rows (the DynamicEmbedding paper's DynamicCell): the state slots
// it keeps beside each row, the parameters it takes, and the update it runs over a batch of
// rows where the rows live. The built-in optimizers are rules too (builtin_rules.hpp); a user's
// rule is one more subclass, registered by name (rule_registry.hpp).
//
//   class decayed_sgd final : public update_rule {
//   public:
//     std::string_view name() const override { return "decayed_sgd"; }
//     std::vector<rule_param> params() const override { return {{"learning_rate", 0.01f}}; }
//     void update(const rule_context& c, std::span<const row_update> rows) const override {
//       for (auto& r : rows)
//         for (size_t i = 0; i < c.dim; ++i)
//           r.values[i] -= c.params[0] / (1 + r.frequency) * r.grad[i];
//     }
//   };
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "messages/errc.hpp"
#include "messages/optimizer_config.hpp"

namespace darcy::compute {

/// How much of a row one state slot holds: a float for each of the row's values, or one float.
enum class slot_shape : uint8_t { per_value = 0, per_row = 1 };

/// One state slot of a rule. A new row's slot starts at the value of the parameter named
/// `initial_param` when that is not empty, else at `initial`.
struct rule_slot {
  std::string name;
  slot_shape shape = slot_shape::per_value;
  float initial = 0;
  std::string initial_param;
};

/// A parameter of a rule: its name and the value it takes when a table's config leaves it out.
struct rule_param {
  std::string name;
  float default_value = 0;
};

/// What an update knows besides the rows: the rows' dimension, the table's global step, and
/// the parameters' values in the order of update_rule::params().
struct rule_context {
  size_t dim = 0;
  int64_t step = 0;
  std::span<const float> params;
};

/// One row of an update. `values` and `grad` hold dim floats, `slots` the rule's slot floats
/// (slot_floats) in the order of update_rule::slots(); none of the three overlap. `updates`
/// counts this update already; `frequency` and `last_update` are the row's lookups so far and
/// the step of its last update before this one.
struct row_update {
  float* values = nullptr;
  float* slots = nullptr;
  const float* grad = nullptr;
  uint64_t updates = 0;
  uint64_t frequency = 0;
  int64_t last_update = 0;
};

/// One row a lookup reads, before it is copied out: a rule that reacts on lookup may change
/// `values` and `slots` (laid out as in row_update).
struct row_lookup {
  float* values = nullptr;
  float* slots = nullptr;
  uint64_t frequency = 0;
  int64_t last_update = 0;
};

/// A rule is stateless: its state is in the rows' slots, its settings in rule_context::params.
/// Its members may be called from any thread at once. Every member is defined in this header,
/// so that a plugin's rule needs nothing from the process that loads it (rule_plugin.hpp).
class update_rule {
public:
  virtual ~update_rule() = default;

  /// The name tables give in their config: lower case, digits and '_'.
  virtual std::string_view name() const = 0;
  /// The state slots it keeps beside each row, in the order the slot floats hold them.
  virtual std::vector<rule_slot> slots() const { return {}; }
  /// The parameters it takes, in the order rule_context::params holds their values.
  virtual std::vector<rule_param> params() const = 0;
  /// errc::invalid_config naming the parameter when `values` (in params() order) are outside
  /// what update accepts.
  virtual plain_error check(std::span<const float> values) const {
    (void)values;
    return {};
  }
  /// Applies each row's gradient to its values and slots. Gradients are finite (the caller
  /// checks); rows are distinct.
  virtual void update(const rule_context& context, std::span<const row_update> rows) const = 0;
  /// Whether on_lookup changes anything: a lookup skips rules that do not react.
  virtual bool reacts_on_lookup() const { return false; }
  /// The forward reaction of §3.2.2: called on each row a training lookup reads, before it is
  /// read. Does nothing unless overridden.
  virtual void on_lookup(const rule_context& context, std::span<const row_lookup> rows) const {
    (void)context;
    (void)rows;
  }
};

/// Floats of `rule`'s slots in a row of `dim` values.
size_t slot_floats(const update_rule& rule, size_t dim);

} // namespace darcy::compute
