// A rule bound to a table: the rule, its parameters' values taken from the table's config
// (defaults filled in, names and values checked) and the rows' dimension. A store holds one
// per table and calls it once per batch of rows.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "compute/rules/update_rule.hpp"

namespace darcy::compute {

class bound_rule {
public:
  /// errc::invalid_config naming what is wrong: a null rule, a dim of 0, a value for a
  /// parameter the rule does not take or given twice, or values its check refuses.
  static plain_expected<bound_rule> bind(std::shared_ptr<const update_rule> rule,
                                         std::span<const rule_value> values, size_t dim);

  const update_rule& rule() const { return *rule_; }
  size_t dim() const { return dim_; }
  /// Floats of the slots of one row.
  size_t slot_floats() const { return initial_slots_.size(); }
  /// The parameters' values, in the order of update_rule::params().
  std::span<const float> params() const { return params_; }
  /// The value of the parameter named `name`; 0 when the rule takes none of that name.
  float param(std::string_view name) const;

  /// Sets a new row's slots (slot_floats() floats) to their starting values.
  void init_slots(std::span<float> slots) const;
  /// update_rule::update with this table's context.
  void update(int64_t step, std::span<const row_update> rows) const {
    rule_->update({dim_, step, params_}, rows);
  }
  bool reacts_on_lookup() const { return reacts_; }
  /// update_rule::on_lookup with this table's context.
  void on_lookup(int64_t step, std::span<const row_lookup> rows) const {
    rule_->on_lookup({dim_, step, params_}, rows);
  }

private:
  std::shared_ptr<const update_rule> rule_;
  size_t dim_ = 0;
  bool reacts_ = false;
  std::vector<float> params_;
  std::vector<rule_param> specs_;
  /// One row's slots as a new row starts them.
  std::vector<float> initial_slots_;
};

class rule_registry;

/// The rule a table's `cfg` names, bound to rows of `dim` values: cfg.rule with cfg.params when
/// set (errc::unknown_rule naming it when `registry` has no rule of that name), else the
/// built-in rule of cfg.kind with the kind's fields as its parameters. Fails as bind.
plain_expected<bound_rule> bind_rule(const optimizer_config& cfg, size_t dim,
                                     const rule_registry& registry);

} // namespace darcy::compute
