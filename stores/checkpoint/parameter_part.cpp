#include "stores/checkpoint/parameter_part.hpp"

#include <cstring>
#include <sstream>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

using compute::nn::matrix;

// Layout, host byte order (little-endian on every supported machine):
//   magic "DARCYNN2", u64 steps, u32 slots, u32 count,
//   count × { u32 name length, name, u64 rows, u64 cols, value, slots × (rows·cols floats) }.
// "DARCYNN1" (before the optimizer kinds) is the same with no `slots` field and two slots
// (Adam's m and v); it is still read.
constexpr std::string_view part_magic = "DARCYNN2";
constexpr std::string_view adam_part_magic = "DARCYNN1";

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
                              const compute::nn::optimizer& opt) {
  auto state = opt.export_slots(params);
  std::string out{part_magic};
  put(out, state.steps);
  put(out, static_cast<uint32_t>(state.slots.size()));
  put(out, static_cast<uint32_t>(params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    auto& p = *params[i];
    put(out, static_cast<uint32_t>(p.name.size()));
    out += p.name;
    put(out, static_cast<uint64_t>(p.value.rows()));
    put(out, static_cast<uint64_t>(p.value.cols()));
    put_matrix(out, p.value);
    for (auto& slot : state.slots)
      put_matrix(out, slot[i]);
  }
  return out;
}

namespace {

/// The header of a part: its step count, slots per parameter and parameter count.
struct part_header {
  uint64_t steps = 0;
  uint32_t slots = 0;
  uint32_t count = 0;
};

caf::error corrupt(const std::string& why) {
  return make_error(errc::corrupt_file, "parameter part: " + why);
}

caf::expected<part_header> read_header(std::string_view bytes, part_reader& in) {
  part_header h;
  auto magic = bytes.substr(0, part_magic.size());
  if (magic == part_magic) {
    in = part_reader{bytes.substr(part_magic.size())};
    if (!in.get(h.steps) || !in.get(h.slots) || !in.get(h.count))
      return corrupt("truncated header");
  } else if (magic == adam_part_magic) {
    in = part_reader{bytes.substr(adam_part_magic.size())};
    h.slots = 2;
    if (!in.get(h.steps) || !in.get(h.count))
      return corrupt("truncated header");
  } else {
    return corrupt("not a parameter part");
  }
  return h;
}

} // namespace

caf::error decode_parameters(std::string_view bytes,
                             const compute::nn::parameter_list<float>& params,
                             compute::nn::optimizer& opt) {
  part_reader in{std::string_view{}};
  auto header = read_header(bytes, in);
  if (!header)
    return std::move(header.error());
  if (header->count != params.size())
    return make_error(errc::dimension_mismatch,
                      "parameter part holds " + std::to_string(header->count) +
                        " parameters, not " + std::to_string(params.size()));
  if (header->slots != opt.slot_count())
    return make_error(errc::dimension_mismatch,
                      "parameter part holds " + std::to_string(header->slots) +
                        " optimizer slots per parameter where " + to_string(opt.config().kind) +
                        " keeps " + std::to_string(opt.slot_count()));
  compute::nn::optimizer_slots state;
  state.steps = header->steps;
  state.slots.resize(header->slots);
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
    matrix value(rows, cols);
    if (!in.get(value))
      return corrupt("truncated values of " + name);
    values.push_back(std::move(value));
    for (auto& slot : state.slots) {
      matrix s(rows, cols);
      if (!in.get(s))
        return corrupt("truncated values of " + name);
      slot.push_back(std::move(s));
    }
  }
  if (!in.done())
    return corrupt("bytes after the last parameter");
  for (size_t i = 0; i < params.size(); ++i) {
    params[i]->value = std::move(values[i]);
    params[i]->zero_grad();
  }
  opt.import_slots(params, std::move(state));
  return {};
}

caf::expected<std::map<std::string, matrix>> decode_named_values(std::string_view bytes) {
  part_reader in{std::string_view{}};
  auto header = read_header(bytes, in);
  if (!header)
    return std::move(header.error());
  std::map<std::string, matrix> out;
  for (uint32_t i = 0; i < header->count; ++i) {
    uint32_t name_size = 0;
    std::string name;
    uint64_t rows = 0, cols = 0;
    if (!in.get(name_size) || !in.get(name, name_size) || !in.get(rows) || !in.get(cols))
      return corrupt("truncated");
    // 1 + slots matrices of rows × cols floats must follow; checked before allocating.
    auto floats_per_entry = (uint64_t{header->slots} + 1) * sizeof(float);
    if (cols != 0 && rows > in.left() / floats_per_entry / cols)
      return corrupt("truncated values of " + name);
    matrix value(rows, cols), slot(rows, cols);
    if (!in.get(value))
      return corrupt("truncated values of " + name);
    for (uint32_t k = 0; k < header->slots; ++k)
      if (!in.get(slot))
        return corrupt("truncated values of " + name);
    out[name] = std::move(value);
  }
  if (!in.done())
    return corrupt("bytes after the last parameter");
  return out;
}

caf::expected<file_info> write_parameter_part(const checkpoint_dir& root, const std::string& rel,
                                              const compute::nn::parameter_list<float>& params,
                                              const compute::nn::optimizer& opt) {
  return root.write_part(rel, encode_parameters(params, opt), params.size());
}

caf::error read_parameter_part(const checkpoint_dir& root, const file_info& part,
                               const compute::nn::parameter_list<float>& params,
                               compute::nn::optimizer& opt) {
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
