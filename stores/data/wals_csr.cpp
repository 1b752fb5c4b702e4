#include "stores/data/wals_csr.hpp"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<wals_csr_sides> open_wals_csr(const std::string& dir) {
  auto rows = csr_file::open(dir + "/rows.csr");
  if (!rows)
    return std::move(rows.error());
  auto cols = csr_file::open(dir + "/cols.csr");
  if (!cols)
    return std::move(cols.error());
  auto& r = **rows;
  auto& c = **cols;
  if (c.rows() != r.cols() || c.cols() != r.rows() || c.nnz() != r.nnz())
    return make_error(errc::corrupt_file,
                      dir + ": cols.csr (" + std::to_string(c.rows()) + " x " +
                        std::to_string(c.cols()) + ", " + std::to_string(c.nnz()) +
                        " entries) is not the transpose of rows.csr (" + std::to_string(r.rows()) +
                        " x " + std::to_string(r.cols()) + ", " + std::to_string(r.nnz()) + ")");
  return wals_csr_sides{std::move(*rows), std::move(*cols)};
}

caf::error write_synthetic_csr(const compute::synthetic_spec& spec, const std::string& dir,
                               uint64_t memory_bytes) {
  auto gen = compute::synthetic_rows::make(spec);
  if (!gen)
    return make_error(gen.error());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto rows_path = dir + "/rows.csr";
  auto w = csr_file_writer::create(rows_path, spec.rows, spec.cols);
  if (!w)
    return w.error();
  // Rows are drawn a chunk at a time, each thread a slice of it, and written in order.
  auto threads = std::max<uint32_t>(spec.threads, 1);
  constexpr uint64_t chunk = 1 << 16;
  std::vector<std::vector<std::pair<uint32_t, float>>> drawn(chunk);
  for (uint64_t first = 0; first < spec.rows; first += chunk) {
    auto n = std::min(chunk, spec.rows - first);
    std::vector<std::thread> pool;
    for (uint32_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (auto i = n * t / threads; i < n * (t + 1) / threads; ++i)
          gen->row(first + i, drawn[i]);
      });
    for (auto& t : pool)
      t.join();
    for (uint64_t i = 0; i < n; ++i)
      if (auto err = w->add_row(drawn[i]))
        return err;
  }
  if (auto err = w->finish())
    return err;
  auto rows = csr_file::open(rows_path);
  if (!rows)
    return rows.error();
  return transpose_csr_file(**rows, dir + "/cols.csr", memory_bytes);
}

} // namespace darcy::stores
