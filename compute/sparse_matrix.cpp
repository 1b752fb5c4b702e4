#include "compute/sparse_matrix.hpp"

#include <algorithm>
#include <string>

#include "messages/errc.hpp"

namespace darcy::compute {

plain_expected<csr_matrix> from_triples(uint64_t rows, uint64_t cols, std::vector<triple> triples) {
  for (auto& t : triples)
    if (t.row >= rows || t.col >= cols)
      return plain_error{errc::invalid_argument, "entry (" + std::to_string(t.row) + ", " +
                                                   std::to_string(t.col) + ") outside a " +
                                                   std::to_string(rows) + " x " +
                                                   std::to_string(cols) + " matrix"};
  std::sort(triples.begin(), triples.end(), [](const triple& a, const triple& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  csr_matrix m;
  m.rows = rows;
  m.cols = cols;
  m.offsets.assign(rows + 1, 0);
  m.indices.reserve(triples.size());
  m.values.reserve(triples.size());
  for (size_t i = 0; i < triples.size(); ++i) {
    auto& t = triples[i];
    if (i > 0 && t.row == triples[i - 1].row && t.col == triples[i - 1].col) {
      m.values.back() += t.value;
      continue;
    }
    m.indices.push_back(t.col);
    m.values.push_back(t.value);
    ++m.offsets[t.row + 1];
  }
  for (uint64_t r = 0; r < rows; ++r)
    m.offsets[r + 1] += m.offsets[r];
  return m;
}

csr_matrix transpose(const csr_matrix& m) {
  csr_matrix t;
  t.rows = m.cols;
  t.cols = m.rows;
  t.offsets.assign(m.cols + 1, 0);
  for (auto c : m.indices)
    ++t.offsets[c + 1];
  for (uint64_t c = 0; c < m.cols; ++c)
    t.offsets[c + 1] += t.offsets[c];
  t.indices.resize(m.nnz());
  t.values.resize(m.nnz());
  std::vector<uint64_t> next(t.offsets.begin(), t.offsets.end() - 1);
  for (uint64_t r = 0; r < m.rows; ++r)
    for (uint64_t i = m.offsets[r]; i < m.offsets[r + 1]; ++i) {
      auto pos = next[m.indices[i]]++;
      t.indices[pos] = static_cast<uint32_t>(r);
      t.values[pos] = m.values[i];
    }
  return t;
}

csr_matrix slice_rows(const csr_matrix& m, uint64_t begin, uint64_t end) {
  csr_matrix s;
  s.rows = end - begin;
  s.cols = m.cols;
  auto first = m.offsets[begin];
  s.offsets.resize(s.rows + 1);
  for (uint64_t r = 0; r <= s.rows; ++r)
    s.offsets[r] = m.offsets[begin + r] - first;
  s.indices.assign(m.indices.begin() + first, m.indices.begin() + m.offsets[end]);
  s.values.assign(m.values.begin() + first, m.values.begin() + m.offsets[end]);
  return s;
}

} // namespace darcy::compute
