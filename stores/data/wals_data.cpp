#include "stores/data/wals_data.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>

#include "compute/ranking.hpp"
#include "compute/synthetic_matrix.hpp"
#include "messages/error.hpp"
#include "stores/data/wals_csr.hpp"

namespace darcy::stores {

namespace {

/// Numbers string ids in order of first appearance.
class id_map {
public:
  explicit id_map(std::vector<std::string>& names) : names_(names) {
    for (size_t i = 0; i < names_.size(); ++i)
      index_.emplace(names_[i], static_cast<uint32_t>(i));
  }
  uint32_t get(std::string_view name) {
    auto [it, added] = index_.try_emplace(std::string{name}, static_cast<uint32_t>(names_.size()));
    if (added)
      names_.emplace_back(name);
    return it->second;
  }
  const uint32_t* find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &it->second;
  }

private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, uint32_t> index_;
};

std::vector<std::string_view> split(std::string_view line, char delimiter) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    auto at = line.find(delimiter, start);
    auto field = line.substr(start, at == std::string_view::npos ? at : at - start);
    while (!field.empty() && (field.front() == ' ' || field.front() == '"'))
      field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '"'))
      field.remove_suffix(1);
    fields.push_back(field);
    if (at == std::string_view::npos)
      return fields;
    start = at + 1;
  }
}

bool parse_float(std::string_view text, float& out) {
  auto end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

/// Calls `line_fn(fields, line_number)` for every non-empty line of `path`.
template <class F>
caf::error for_each_line(const std::string& path, char delimiter, F line_fn) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::not_found, "cannot open " + path);
  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    if (auto err = line_fn(split(line, delimiter), number))
      return err;
  }
  if (in.bad())
    return make_error(errc::io_error, "reading " + path);
  return {};
}

caf::error malformed(const std::string& path, uint64_t line, const std::string& why) {
  return make_error(errc::corrupt_file, path + ":" + std::to_string(line) + ": " + why +
                                          " (pass --skip-malformed to skip such lines)");
}

caf::expected<wals_dataset> load_triples(const wals_data_spec& spec, char delimiter) {
  wals_dataset data;
  id_map rows{data.row_ids}, cols{data.col_ids};
  std::vector<compute::triple> triples;
  auto err = for_each_line(spec.path, delimiter, [&](auto fields, uint64_t line) -> caf::error {
    float value = 0;
    if (fields.size() < 3 || fields[0].empty() || fields[1].empty() ||
        !parse_float(fields[2], value)) {
      if (line == 1 && fields.size() >= 3)
        return {}; // a header
      if (spec.skip_malformed) {
        ++data.skipped_lines;
        return {};
      }
      return malformed(spec.path, line,
                       fields.size() < 3
                         ? "expected row, column and value"
                         : "value '" + std::string{fields[2]} + "' is not a number");
    }
    if (!std::isfinite(value) || value < 0)
      return make_error(errc::invalid_argument, spec.path + ":" + std::to_string(line) +
                                                  ": weight " + std::string{fields[2]} +
                                                  " must be finite and >= 0");
    triples.push_back({rows.get(fields[0]), cols.get(fields[1]), value});
    return {};
  });
  if (err)
    return err;
  if (triples.empty())
    return make_error(errc::invalid_argument, spec.path + ": the matrix has no entries");
  auto m = compute::from_triples(data.row_ids.size(), data.col_ids.size(), std::move(triples));
  if (!m)
    return make_error(m.error());
  data.matrix = std::move(*m);
  return data;
}

/// Appends "kind:feature" entries: of rows (row features, as columns) or columns.
caf::error add_features(wals_dataset& data, const wals_data_spec& spec, char delimiter,
                        bool of_rows) {
  auto& path = of_rows ? spec.row_features : spec.col_features;
  if (path.empty())
    return {};
  auto& owners = of_rows ? data.row_ids : data.col_ids;
  auto& features = of_rows ? data.col_ids : data.row_ids;
  id_map owner_ids{owners}, feature_ids{features};
  auto owner_count = owners.size();
  // Ids below `own` are the matrix's own rows or columns; features come after them.
  const uint64_t own = of_rows ? data.items : data.users;
  std::vector<compute::triple> triples;
  for (uint64_t r = 0; r < data.matrix.rows; ++r)
    for (auto i = data.matrix.offsets[r]; i < data.matrix.offsets[r + 1]; ++i)
      triples.push_back({static_cast<uint32_t>(r), data.matrix.indices[i], data.matrix.values[i]});
  uint64_t unknown = 0;
  auto err = for_each_line(path, delimiter, [&](auto fields, uint64_t line) -> caf::error {
    if (fields.size() < 2 || fields[0].empty() || fields[1].empty()) {
      if (spec.skip_malformed) {
        ++data.skipped_lines;
        return {};
      }
      return malformed(path, line, "expected an id and a feature");
    }
    auto owner = owner_ids.find(std::string{fields[0]});
    if (!owner) {
      ++unknown; // a header, or an id the matrix does not have
      return {};
    }
    auto feature = feature_ids.get("feature:" + std::string{fields[1]});
    if (feature < own)
      return make_error(errc::invalid_argument,
                        path + ":" + std::to_string(line) + ": feature '" + std::string{fields[1]} +
                          "' collides with the " + (of_rows ? "column" : "row") +
                          " id 'feature:" + std::string{fields[1]} + "' of the matrix");
    if (of_rows)
      triples.push_back({*owner, feature, spec.feature_value});
    else
      triples.push_back({feature, *owner, spec.feature_value});
    return {};
  });
  if (err)
    return err;
  if (owners.size() != owner_count)
    return make_error(errc::invalid_argument, path + ": internal id growth"); // cannot happen
  auto m = compute::from_triples(data.row_ids.size(), data.col_ids.size(), std::move(triples));
  if (!m)
    return make_error(m.error());
  data.matrix = std::move(*m);
  return {};
}

} // namespace

caf::expected<wals_dataset> load_dataset(const wals_data_spec& spec, uint32_t threads) {
  if (!(spec.holdout >= 0 && spec.holdout < 1))
    return make_error(errc::invalid_argument, "hold-out fraction must be in [0, 1)");
  if (!std::isfinite(spec.feature_value) || spec.feature_value < 0)
    return make_error(errc::invalid_argument, "feature value must be finite and >= 0");
  wals_dataset data;
  char delimiter = '\t';
  if (spec.format.empty()) {
    compute::synthetic_spec s{spec.rows, spec.cols, spec.nnz, spec.seed};
    s.threads = threads;
    auto m = compute::synthetic_matrix(s);
    if (!m)
      return make_error(m.error());
    data.matrix = std::move(*m);
  } else if (spec.format == "csr") {
    if (!spec.row_features.empty() || !spec.col_features.empty())
      return make_error(errc::invalid_argument,
                        "features need a matrix with ids (tsv, csv or lastfm), not csr");
    auto sides = open_wals_csr(spec.path);
    if (!sides)
      return std::move(sides.error());
    auto m = sides->rows->read_rows(0, sides->rows->rows());
    if (!m)
      return std::move(m.error());
    data.matrix = std::move(*m);
  } else {
    if (spec.format == "csv")
      delimiter = ',';
    else if (spec.format != "tsv" && spec.format != "lastfm")
      return make_error(errc::invalid_argument,
                        "unknown data format '" + spec.format + "' (tsv, csv, lastfm or csr)");
    auto loaded = load_triples(spec, delimiter);
    if (!loaded)
      return std::move(loaded.error());
    data = std::move(*loaded);
  }
  data.users = data.matrix.rows;
  data.items = data.matrix.cols;
  if (spec.holdout > 0) {
    auto split = compute::split_holdout(data.matrix, spec.holdout, spec.holdout_seed);
    data.matrix = std::move(split.train);
    data.held_out = std::move(split.test);
  }
  data.observed = data.matrix;
  if (!spec.format.empty() && spec.format != "csr") {
    if (auto err = add_features(data, spec, delimiter, true))
      return err;
    if (auto err = add_features(data, spec, delimiter, false))
      return err;
  }
  return data;
}

std::string display_id(const std::vector<std::string>& ids, uint64_t index) {
  return index < ids.size() ? ids[index] : std::to_string(index);
}

namespace {

// What identifies a loaded dataset: the spec, and each named file's size and time.
std::string dataset_key(const wals_data_spec& spec) {
  auto key = spec.format + "|" + std::to_string(spec.feature_value) + "|" +
             std::to_string(spec.skip_malformed) + "|" + std::to_string(spec.rows) + "|" +
             std::to_string(spec.cols) + "|" + std::to_string(spec.nnz) + "|" +
             std::to_string(spec.seed) + "|" + std::to_string(spec.holdout) + "|" +
             std::to_string(spec.holdout_seed);
  const auto matrix_file = spec.format == "csr" ? spec.path + "/rows.csr" : spec.path;
  for (auto* path : {&matrix_file, &spec.row_features, &spec.col_features}) {
    key += "|" + *path;
    std::error_code ec;
    if (path->empty())
      continue;
    auto size = std::filesystem::file_size(*path, ec);
    auto time = std::filesystem::last_write_time(*path, ec);
    key += ":" + std::to_string(size) + ":" + std::to_string(time.time_since_epoch().count());
  }
  return key;
}

} // namespace

caf::expected<std::shared_ptr<const wals_dataset>> load_shared_dataset(const wals_data_spec& spec) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const wals_dataset>> loaded;
  auto key = dataset_key(spec);
  // Held while loading, so that callers of the same spec wait for one read.
  std::lock_guard<std::mutex> guard{mutex};
  std::erase_if(loaded, [](auto& entry) { return entry.second.expired(); });
  if (auto i = loaded.find(key); i != loaded.end())
    if (auto data = i->second.lock())
      return data;
  auto data = load_dataset(spec);
  if (!data)
    return std::move(data.error());
  auto shared = std::make_shared<const wals_dataset>(std::move(*data));
  loaded[key] = shared;
  return shared;
}

std::shared_ptr<const compute::csr_matrix> shared_transpose(
  const std::shared_ptr<const wals_dataset>& data) {
  static std::mutex mutex;
  static std::map<std::weak_ptr<const wals_dataset>, std::weak_ptr<const compute::csr_matrix>,
                  std::owner_less<>>
    transposes;
  // Held while transposing, so that the workers of one dataset wait for one transpose.
  std::lock_guard<std::mutex> guard{mutex};
  std::erase_if(transposes, [](auto& entry) { return entry.first.expired(); });
  if (auto i = transposes.find(data); i != transposes.end())
    if (auto t = i->second.lock())
      return t;
  auto t = std::make_shared<const compute::csr_matrix>(compute::transpose(data->matrix));
  transposes[data] = t;
  return t;
}

} // namespace darcy::stores
