#include "stores/checkpoint/parameter_part.hpp"

#include <cstring>
#include <sstream>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

using compute::nn::matrix;

// Layout, host byte order (little-endian on every supported machine):
//   magic "DARCYNN1", u64 steps, u32 count,
//   count × { u32 name length, name, u64 rows, u64 cols, value, m, v (rows·cols floats each) }.
constexpr std::string_view part_magic = "DARCYNN1";

template <class T>
void put(std::string& out, const T& x) {
  out.append(reinterpret_cast<const char*>(&x), sizeof(T));
}

void put_matrix(std::string& out, const matrix& m) {
  out.append(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(float));
}

class part_reader {
public:
  explicit part_reader(std::string_view bytes) : bytes_(bytes) {}

  template <class T>
  bool get(T& x) {
    if (bytes_.size() < sizeof(T))
      return false;
    std::memcpy(&x, bytes_.data(), sizeof(T));
    bytes_.remove_prefix(sizeof(T));
    return true;
  }

  bool get(std::string& s, size_t n) {
    if (bytes_.size() < n)
      return false;
    s.assign(bytes_.data(), n);
    bytes_.remove_prefix(n);
    return true;
  }

  bool get(matrix& m) {
    auto n = static_cast<size_t>(m.size()) * sizeof(float);
    if (bytes_.size() < n)
      return false;
    std::memcpy(m.data(), bytes_.data(), n);
    bytes_.remove_prefix(n);
    return true;
  }

  bool done() const { return bytes_.empty(); }
  size_t left() const { return bytes_.size(); }

private:
  std::string_view bytes_;
};

} // namespace

std::string encode_parameters(const compute::nn::parameter_list<float>& params,
                              const compute::nn::adam<float>& opt) {
  auto slots = opt.export_slots(params);
  std::string out{part_magic};
  put(out, slots.steps);
  put(out, static_cast<uint32_t>(params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    auto& p = *params[i];
    put(out, static_cast<uint32_t>(p.name.size()));
    out += p.name;
    put(out, static_cast<uint64_t>(p.value.rows()));
    put(out, static_cast<uint64_t>(p.value.cols()));
    put_matrix(out, p.value);
    put_matrix(out, slots.m[i]);
    put_matrix(out, slots.v[i]);
  }
  return out;
}

caf::error decode_parameters(std::string_view bytes,
                             const compute::nn::parameter_list<float>& params,
                             compute::nn::adam<float>& opt) {
  auto corrupt = [](const std::string& why) {
    return make_error(errc::corrupt_file, "parameter part: " + why);
  };
  if (bytes.substr(0, part_magic.size()) != part_magic)
    return corrupt("not a parameter part");
  part_reader in{bytes.substr(part_magic.size())};
  compute::nn::adam_slots<float> slots;
  uint32_t count = 0;
  if (!in.get(slots.steps) || !in.get(count))
    return corrupt("truncated header");
  if (count != params.size())
    return make_error(errc::dimension_mismatch, "parameter part holds " + std::to_string(count) +
                                                  " parameters, not " +
                                                  std::to_string(params.size()));
  std::vector<matrix> values;
  for (auto* p : params) {
    uint32_t name_size = 0;
    std::string name;
    uint64_t rows = 0, cols = 0;
    if (!in.get(name_size) || !in.get(name, name_size) || !in.get(rows) || !in.get(cols))
      return corrupt("truncated");
    if (name != p->name || rows != static_cast<uint64_t>(p->value.rows()) ||
        cols != static_cast<uint64_t>(p->value.cols()))
      return make_error(errc::dimension_mismatch,
                        "parameter part holds " + name + " " + std::to_string(rows) + "x" +
                          std::to_string(cols) + " where " + p->name + " is " +
                          std::to_string(p->value.rows()) + "x" + std::to_string(p->value.cols()));
    matrix value(rows, cols), m(rows, cols), v(rows, cols);
    if (!in.get(value) || !in.get(m) || !in.get(v))
      return corrupt("truncated values of " + name);
    values.push_back(std::move(value));
    slots.m.push_back(std::move(m));
    slots.v.push_back(std::move(v));
  }
  if (!in.done())
    return corrupt("bytes after the last parameter");
  for (size_t i = 0; i < params.size(); ++i) {
    params[i]->value = std::move(values[i]);
    params[i]->zero_grad();
  }
  opt.import_slots(params, std::move(slots));
  return {};
}

caf::expected<std::map<std::string, matrix>> decode_named_values(std::string_view bytes) {
  auto corrupt = [](const std::string& why) {
    return make_error(errc::corrupt_file, "parameter part: " + why);
  };
  if (bytes.substr(0, part_magic.size()) != part_magic)
    return corrupt("not a parameter part");
  part_reader in{bytes.substr(part_magic.size())};
  uint64_t steps = 0;
  uint32_t count = 0;
  if (!in.get(steps) || !in.get(count))
    return corrupt("truncated header");
  std::map<std::string, matrix> out;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t name_size = 0;
    std::string name;
    uint64_t rows = 0, cols = 0;
    if (!in.get(name_size) || !in.get(name, name_size) || !in.get(rows) || !in.get(cols))
      return corrupt("truncated");
    // Three matrices of rows × cols floats must follow; checked before anything is allocated.
    if (cols != 0 && rows > in.left() / 12 / cols)
      return corrupt("truncated values of " + name);
    matrix value(rows, cols), moment(rows, cols);
    if (!in.get(value) || !in.get(moment) || !in.get(moment))
      return corrupt("truncated values of " + name);
    out[name] = std::move(value);
  }
  if (!in.done())
    return corrupt("bytes after the last parameter");
  return out;
}

caf::expected<file_info> write_parameter_part(const checkpoint_dir& root, const std::string& rel,
                                              const compute::nn::parameter_list<float>& params,
                                              const compute::nn::adam<float>& opt) {
  return root.write_part(rel, encode_parameters(params, opt), params.size());
}

caf::error read_parameter_part(const checkpoint_dir& root, const file_info& part,
                               const compute::nn::parameter_list<float>& params,
                               compute::nn::adam<float>& opt) {
  auto bytes = root.read_part(part);
  if (!bytes)
    return std::move(bytes.error());
  if (auto err = decode_parameters(*bytes, params, opt))
    return make_error(static_cast<errc>(err.code()), part.path + ": " + context_of(err));
  return {};
}

namespace {

// One line per part: path, checksum, rows, bytes, tab-separated; paths hold no tabs.
constexpr std::string_view index_header = "darcy-part-index 1\n";

} // namespace

caf::expected<file_info> write_part_index(const checkpoint_dir& root, const std::string& rel,
                                          const std::vector<file_info>& parts) {
  std::string text{index_header};
  for (auto& p : parts)
    text += p.path + "\t" + std::to_string(p.checksum) + "\t" + std::to_string(p.rows) + "\t" +
            std::to_string(p.bytes) + "\n";
  return root.write_part(rel, text, parts.size());
}

caf::expected<std::vector<file_info>> read_part_index(const checkpoint_dir& root,
                                                      const file_info& part) {
  auto text = root.read_part(part);
  if (!text)
    return std::move(text.error());
  if (text->substr(0, index_header.size()) != index_header)
    return make_error(errc::corrupt_file, part.path + ": not a part index");
  std::istringstream in{text->substr(index_header.size())};
  std::vector<file_info> parts;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields{line};
    file_info p;
    if (!std::getline(fields, p.path, '\t') || !(fields >> p.checksum >> p.rows >> p.bytes))
      return make_error(errc::corrupt_file, part.path + ": bad line '" + line + "'");
    parts.push_back(std::move(p));
  }
  return parts;
}

} // namespace darcy::stores
