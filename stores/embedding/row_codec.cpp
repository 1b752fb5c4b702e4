#include "stores/embedding/row_codec.hpp"

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

size_t row_record_bytes(size_t dim, size_t slots) {
  return header_bytes + (dim + dim * slots) * sizeof(float);
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

bool decode_row_record(std::string_view key, std::string_view bytes, size_t dim, size_t slots,
                       std::vector<float>& values, std::vector<float>& slot_values,
                       row_record& out) {
  if (bytes.size() != row_record_bytes(dim, slots))
    return false;
  uint64_t frequency, updates;
  int64_t last_update;
  std::memcpy(&frequency, bytes.data(), 8);
  std::memcpy(&updates, bytes.data() + 8, 8);
  std::memcpy(&last_update, bytes.data() + 16, 8);
  values.resize(dim);
  slot_values.resize(dim * slots);
  copy_bytes(values.data(), bytes.data() + header_bytes, dim * sizeof(float));
  copy_bytes(slot_values.data(), bytes.data() + header_bytes + dim * sizeof(float),
             dim * slots * sizeof(float));
  out = {key, values, slot_values, frequency, updates, last_update};
  return true;
}

std::string row_format(const de_config& cfg, size_t slots) {
  return "dim=" + std::to_string(cfg.dim) + ";slots=" + std::to_string(slots) +
         ";optimizer=" + to_string(cfg.optimizer.kind);
}

} // namespace darcy::stores
