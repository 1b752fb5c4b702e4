#include "ops/estimator/readers.hpp"

#include <zlib.h>

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "messages/error.hpp"

namespace darcy::ops::estimator {

namespace {

using compute::estimator::feature_value;

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    auto at = line.find(sep, start);
    out.push_back(line.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos)
      return out;
    start = at + 1;
  }
}

bool parse_number(const std::string& s, double& out) {
  auto first = s.data(), last = s.data() + s.size();
  while (first < last && *first == ' ')
    ++first;
  while (last > first && last[-1] == ' ')
    --last;
  auto [end, ec] = std::from_chars(first, last, out);
  return ec == std::errc{} && end == last && first != last;
}

/// The whole file, gunzipped when it is gzipped (gzread passes plain files through).
caf::expected<std::string> slurp(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return make_error(errc::not_found, "no file " + path);
  std::string out;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<size_t>(n));
  int status = 0;
  gzerror(f, &status);
  gzclose(f);
  if (n < 0 || (status != Z_OK && status != Z_STREAM_END))
    return make_error(errc::corrupt_file, path + ": damaged gzip data");
  return out;
}

uint32_t big_endian(const std::string& b, size_t at) {
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])); };
  return u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3);
}

/// The dimensions and the payload offset of an IDX file of unsigned bytes with `dims` dims.
caf::expected<std::vector<uint32_t>> idx_header(const std::string& b, uint32_t dims,
                                                const std::string& path) {
  if (b.size() < 4 + 4 * dims || big_endian(b, 0) != (0x0800u | dims))
    return make_error(errc::corrupt_file, path + ": not an IDX file of unsigned bytes with " +
                                            std::to_string(dims) + " dimensions");
  std::vector<uint32_t> shape;
  uint64_t size = 1;
  for (uint32_t i = 0; i < dims; ++i) {
    shape.push_back(big_endian(b, 4 + 4 * i));
    size *= shape.back();
  }
  if (b.size() != 4 + 4 * dims + size)
    return make_error(errc::corrupt_file, path + ": " + std::to_string(b.size()) +
                                            " bytes where the header promises " +
                                            std::to_string(4 + 4 * dims + size));
  return shape;
}

} // namespace

caf::expected<example_table> read_delimited(const std::string& path, const delimited_options& o) {
  std::ifstream in{path};
  if (!in)
    return make_error(errc::not_found, "no file " + path);
  std::string line;
  if (!std::getline(in, line))
    return make_error(errc::corrupt_file, path + ": no header row");
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  auto header = split(line, o.delimiter);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < header.size(); ++i)
    index[header[i]] = i;
  for (auto& name : o.numeric)
    if (!index.count(name))
      return make_error(errc::invalid_config, path + ": no column '" + name + "'");
  if (!o.label_column.empty() && !index.count(o.label_column))
    return make_error(errc::invalid_config, path + ": no label column '" + o.label_column + "'");
  example_table t;
  std::vector<std::vector<double>> numbers(header.size());
  std::vector<std::vector<std::vector<std::string>>> strings(header.size());
  std::vector<float> labels;
  size_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    auto cells = split(line, o.delimiter);
    if (cells.size() != header.size())
      return make_error(errc::corrupt_file, path + " line " + std::to_string(line_no) + ": " +
                                              std::to_string(cells.size()) +
                                              " columns, the header has " +
                                              std::to_string(header.size()));
    for (size_t c = 0; c < cells.size(); ++c) {
      bool is_label = header[c] == o.label_column;
      if (is_label || o.numeric.count(header[c])) {
        double v = 0;
        if (!parse_number(cells[c], v))
          return make_error(errc::corrupt_file, path + " line " + std::to_string(line_no) + ": '" +
                                                  cells[c] + "' in column '" + header[c] +
                                                  "' is not a number");
        (is_label ? (labels.push_back(static_cast<float>(v)), void()) : numbers[c].push_back(v));
      } else {
        strings[c].push_back(o.multi_value ? split(cells[c], o.multi_value)
                                           : std::vector<std::string>{cells[c]});
      }
    }
  }
  for (size_t c = 0; c < header.size(); ++c) {
    if (header[c] == o.label_column)
      continue;
    t.features[header[c]] = o.numeric.count(header[c])
                              ? feature_value::numeric(std::move(numbers[c]))
                              : feature_value::categorical(std::move(strings[c]));
  }
  if (!o.label_column.empty())
    t.labels = Eigen::Map<matrix>(labels.data(), static_cast<Eigen::Index>(labels.size()), 1);
  return t;
}

caf::expected<example_table> read_idx(const std::string& images, const std::string& labels,
                                      const std::string& key) {
  auto bytes = slurp(images);
  if (!bytes)
    return std::move(bytes.error());
  auto shape = idx_header(*bytes, 3, images);
  if (!shape)
    return std::move(shape.error());
  auto n = (*shape)[0];
  auto width = (*shape)[1] * (*shape)[2];
  example_table t;
  std::vector<double> pixels(size_t{n} * width);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<unsigned char>((*bytes)[16 + i]) / 255.0;
  t.features[key] = feature_value::numeric(std::move(pixels), width);
  if (labels.empty())
    return t;
  auto label_bytes = slurp(labels);
  if (!label_bytes)
    return std::move(label_bytes.error());
  auto label_shape = idx_header(*label_bytes, 1, labels);
  if (!label_shape)
    return std::move(label_shape.error());
  if ((*label_shape)[0] != n)
    return make_error(errc::corrupt_file, labels + ": " + std::to_string((*label_shape)[0]) +
                                            " labels for " + std::to_string(n) + " images");
  t.labels.resize(n, 1);
  for (uint32_t i = 0; i < n; ++i)
    t.labels(i, 0) = static_cast<unsigned char>((*label_bytes)[8 + i]);
  return t;
}

caf::expected<example_table> read_text_lines(const std::string& path, const std::string& key) {
  std::ifstream in{path};
  if (!in)
    return make_error(errc::not_found, "no file " + path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line};
    std::vector<std::string> tokens;
    for (std::string w; words >> w;)
      tokens.push_back(w);
    if (!tokens.empty())
      rows.push_back(std::move(tokens));
  }
  example_table t;
  t.features[key] = feature_value::categorical(std::move(rows));
  return t;
}

} // namespace darcy::ops::estimator
