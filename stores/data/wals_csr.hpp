// A WALS matrix as a directory of two csr_files, rows.csr and cols.csr (its transpose): the
// data of a run too large to load whole (wals_data_spec format "csr"), whose workers read the
// rows of one block at a time. Written from the synthetic generator without the matrix ever
// being in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/synthetic_matrix.hpp"
#include "stores/data/csr_file.hpp"

namespace darcy::stores {

struct wals_csr_sides {
  std::shared_ptr<const csr_file> rows;
  std::shared_ptr<const csr_file> cols;
};

/// dir/rows.csr and dir/cols.csr, opened (csr_file::open's errors); errc::corrupt_file when
/// cols.csr is not the transpose's shape (rows and cols swapped, the same entries' count).
caf::expected<wals_csr_sides> open_wals_csr(const std::string& dir);

/// Writes the matrix synthetic_matrix(spec) would build to dir (created if missing), drawing
/// rows on spec.threads threads; the transpose holds at most `memory_bytes` of entries at a
/// time. synthetic_rows::make's errors, or the files'.
caf::error write_synthetic_csr(const compute::synthetic_spec& spec, const std::string& dir,
                               uint64_t memory_bytes);

} // namespace darcy::stores
