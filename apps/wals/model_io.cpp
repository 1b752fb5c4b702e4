#include "apps/wals/model_io.hpp"

#include <filesystem>
#include <sstream>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"

namespace darcy::wals {

namespace {

std::string join_lines(const std::vector<std::string>& ids) {
  std::string out;
  for (auto& id : ids)
    out += id + "\n";
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

} // namespace

caf::error save_model(const std::string& dir, const model& m) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + dir + ": " + ec.message());
  std::ostringstream meta;
  meta.precision(9);
  auto& p = m.params;
  meta << "dim " << p.dim << "\nalpha " << p.alpha << "\nweight " << to_string(p.weight_fn)
       << "\nsigma " << p.sigma << "\nlambda " << p.lambda << "\nsolver " << to_string(p.solver)
       << "\ncg_steps " << p.cg_steps << "\nusers " << m.users << "\nitems " << m.items
       << "\nfeature_value " << m.feature_value << "\nlosses";
  for (auto l : m.losses)
    meta << ' ' << l;
  meta << '\n';
  std::ostringstream seen;
  for (uint64_t r = 0; r < m.seen.rows; ++r)
    for (auto c : m.seen.row_indices(r))
      seen << r << '\t' << c << '\n';
  for (auto [name, text] :
       {std::pair{"meta.txt", meta.str()}, std::pair{"rows.txt", join_lines(m.row_ids)},
        std::pair{"cols.txt", join_lines(m.col_ids)}, std::pair{"seen.tsv", seen.str()}})
    if (auto err = base::write_file_atomically(dir + "/" + name, text))
      return err;
  if (auto err = stores::write_matrix_file(dir + "/U.f32", m.u))
    return err;
  return stores::write_matrix_file(dir + "/V.f32", m.v);
}

caf::expected<model> load_model(const std::string& dir) {
  auto meta = base::read_file(dir + "/meta.txt");
  if (!meta)
    return make_error(errc::not_found,
                      "no WALS model in " + dir + " (meta.txt: " + render(meta.error()) + ")");
  model m;
  std::istringstream in{*meta};
  std::string key;
  while (in >> key) {
    if (key == "dim")
      in >> m.params.dim;
    else if (key == "alpha")
      in >> m.params.alpha;
    else if (key == "sigma")
      in >> m.params.sigma;
    else if (key == "lambda")
      in >> m.params.lambda;
    else if (key == "users")
      in >> m.users;
    else if (key == "items")
      in >> m.items;
    else if (key == "feature_value")
      in >> m.feature_value;
    else if (key == "weight") {
      std::string w;
      in >> w;
      m.params.weight_fn = w == "identity" ? wals_weight_fn::identity : wals_weight_fn::log1p;
    } else {
      std::string rest;
      std::getline(in, rest);
    }
  }
  auto rows = base::read_file(dir + "/rows.txt");
  auto cols = base::read_file(dir + "/cols.txt");
  auto u = stores::read_matrix_file(dir + "/U.f32");
  auto v = stores::read_matrix_file(dir + "/V.f32");
  if (!rows || !cols)
    return make_error(errc::corrupt_file, dir + ": rows.txt or cols.txt is missing");
  if (!u)
    return std::move(u.error());
  if (!v)
    return std::move(v.error());
  m.row_ids = split_lines(*rows);
  m.col_ids = split_lines(*cols);
  m.u = std::move(*u);
  m.v = std::move(*v);
  if (m.u.cols != m.params.dim || m.v.cols != m.params.dim || m.items > m.v.rows ||
      m.users > m.u.rows || (!m.row_ids.empty() && m.row_ids.size() != m.u.rows) ||
      (!m.col_ids.empty() && m.col_ids.size() != m.v.rows))
    return make_error(errc::corrupt_file, dir + ": factors and ids disagree with meta.txt");
  std::vector<compute::triple> seen;
  if (auto text = base::read_file(dir + "/seen.tsv")) {
    std::istringstream s{*text};
    uint64_t r, c;
    while (s >> r >> c)
      if (r < m.u.rows && c < m.v.rows)
        seen.push_back({static_cast<uint32_t>(r), static_cast<uint32_t>(c), 1.0f});
  }
  m.seen = *compute::from_triples(m.u.rows, m.v.rows, std::move(seen));
  return m;
}

} // namespace darcy::wals
