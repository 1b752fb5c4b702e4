#include "compute/rules/update_rule.hpp"

namespace darcy::compute {

size_t slot_floats(const update_rule& rule, size_t dim) {
  size_t n = 0;
  for (auto& s : rule.slots())
    n += s.shape == slot_shape::per_value ? dim : 1;
  return n;
}

} // namespace darcy::compute
