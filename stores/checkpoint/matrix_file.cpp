#include "stores/checkpoint/matrix_file.hpp"

#include <cstring>
#include <string_view>

#include "base/atomic_file.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

namespace {

constexpr char magic[8] = {'D', 'R', 'C', 'Y', 'M', 'A', 'T', '1'};
constexpr size_t header_size = 32;

uint64_t checksum(const float* data, size_t n) {
  return compute::hash_key(
    std::string_view{reinterpret_cast<const char*>(data), n * sizeof(float)});
}

} // namespace

std::string encode_matrix(const float_matrix& m) {
  std::string bytes(header_size + m.values.size() * sizeof(float), '\0');
  uint64_t header[3] = {m.rows, m.cols, checksum(m.values.data(), m.values.size())};
  std::memcpy(bytes.data(), magic, sizeof(magic));
  std::memcpy(bytes.data() + sizeof(magic), header, sizeof(header));
  if (!m.values.empty())
    std::memcpy(bytes.data() + header_size, m.values.data(), m.values.size() * sizeof(float));
  return bytes;
}

caf::expected<float_matrix> decode_matrix(std::string_view bytes, const std::string& path) {
  auto corrupt = [&](const std::string& why) {
    return make_error(errc::corrupt_file, path + ": " + why);
  };
  if (bytes.size() < header_size || std::memcmp(bytes.data(), magic, sizeof(magic)) != 0)
    return corrupt("not a Darcy matrix file");
  uint64_t header[3];
  std::memcpy(header, bytes.data() + sizeof(magic), sizeof(header));
  float_matrix m{header[0], header[1], {}};
  if (m.cols != 0 && m.rows > (bytes.size() - header_size) / sizeof(float) / m.cols)
    return corrupt("truncated: the header promises " + std::to_string(m.rows) + " x " +
                   std::to_string(m.cols) + " floats");
  if (bytes.size() != header_size + m.rows * m.cols * sizeof(float))
    return corrupt("size disagrees with the header");
  m.values.resize(m.rows * m.cols);
  if (!m.values.empty())
    std::memcpy(m.values.data(), bytes.data() + header_size, m.values.size() * sizeof(float));
  if (checksum(m.values.data(), m.values.size()) != header[2])
    return corrupt("checksum mismatch");
  return m;
}

caf::error write_matrix_file(const std::string& path, const float_matrix& m) {
  return base::write_file_atomically(path, encode_matrix(m));
}

caf::expected<float_matrix> read_matrix_file(const std::string& path) {
  auto bytes = base::read_file(path);
  if (!bytes)
    return std::move(bytes.error());
  return decode_matrix(*bytes, path);
}

} // namespace darcy::stores
