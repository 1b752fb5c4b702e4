#include "stores/embedding/row_codec.hpp"

#include <algorithm>
#include <cstring>

#include "compute/optimizer.hpp"

namespace darcy::stores {

namespace {

constexpr size_t header_bytes = 3 * sizeof(uint64_t);

/// memcpy of `n` bytes that allows n = 0 with a null pointer (an empty vector's data()), which
/// memcpy itself does not.
void copy_bytes(void* to, const void* from, size_t n) {
  if (n > 0)
    std::memcpy(to, from, n);
}

} // namespace

size_t row_record_bytes(size_t dim, size_t slot_floats) {
  return header_bytes + (dim + slot_floats) * sizeof(float);
}

void append_row_record(const row_record& row, std::string& out) {
  auto start = out.size();
  out.resize(start + header_bytes + (row.values.size() + row.slots.size()) * sizeof(float));
  auto* p = out.data() + start;
  std::memcpy(p, &row.frequency, 8);
  std::memcpy(p + 8, &row.updates, 8);
  std::memcpy(p + 16, &row.last_update, 8);
  copy_bytes(p + header_bytes, row.values.data(), row.values.size() * sizeof(float));
  copy_bytes(p + header_bytes + row.values.size() * sizeof(float), row.slots.data(),
             row.slots.size() * sizeof(float));
}

bool decode_row_record(std::string_view key, std::string_view bytes, size_t dim, size_t slot_floats,
                       std::vector<float>& values, std::vector<float>& slot_values,
                       row_record& out) {
  if (bytes.size() != row_record_bytes(dim, slot_floats))
    return false;
  uint64_t frequency, updates;
  int64_t last_update;
  std::memcpy(&frequency, bytes.data(), 8);
  std::memcpy(&updates, bytes.data() + 8, 8);
  std::memcpy(&last_update, bytes.data() + 16, 8);
  values.resize(dim);
  slot_values.resize(slot_floats);
  copy_bytes(values.data(), bytes.data() + header_bytes, dim * sizeof(float));
  copy_bytes(slot_values.data(), bytes.data() + header_bytes + dim * sizeof(float),
             slot_floats * sizeof(float));
  out = {key, values, slot_values, frequency, updates, last_update};
  return true;
}

std::string row_format(const de_config& cfg, size_t slot_floats) {
  auto dim = "dim=" + std::to_string(cfg.dim);
  if (cfg.optimizer.rule.empty())
    return dim + ";slots=" + std::to_string(slot_floats / std::max<size_t>(1, cfg.dim)) +
           ";optimizer=" + to_string(cfg.optimizer.kind);
  return dim + ";slot_floats=" + std::to_string(slot_floats) + ";rule=" + cfg.optimizer.rule;
}

} // namespace darcy::stores
