#include "actors/wals/factor_shard.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "compute/finite.hpp"
#include "compute/placement.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "stores/embedding/huge_pages.hpp"
#include "stores/wals/wals_checkpoint.hpp"

namespace darcy::actors {

namespace {

using state_pointer = factor_shard_actor::stateful_pointer<factor_shard_state>;

size_t side_index(wals_side side) {
  return side == wals_side::rows ? 0 : 1;
}

/// Fails unless `epoch` is open for writes on `side`.
caf::error check_open(const factor_shard_state& st, uint64_t epoch, wals_side side) {
  if (epoch == 0 || epoch != st.sides[side_index(side)].open_epoch)
    return make_error(errc::invalid_argument, "factor shard: write for epoch " +
                                                std::to_string(epoch) + ", which is not open on " +
                                                to_string(side));
  return {};
}

caf::error check_finite(std::span<const float> row) {
  if (!compute::all_finite(row))
    return make_error(errc::non_finite, "factor shard: a written row is not finite");
  return {};
}

using side_rows = factor_shard_state::side_rows;

/// The side's rows, drawn (compute::initial_row) on its first use: at 5M rows a side that takes
/// seconds, longer than a spawn waits for its answer.
side_rows& rows_of(state_pointer self, wals_side side) {
  auto& s = self->state.sides[side_index(side)];
  if (!s.current) {
    auto& config = self->state.config;
    auto d = config.params.dim;
    s.current = std::make_shared<std::vector<float>>();
    stores::assign_on_huge_pages(*s.current, s.rows * d);
    for (uint64_t i = 0; i < s.rows; ++i)
      compute::initial_row(config.params, side, compute::global_id(i, config.index, config.count),
                           {s.current->data() + i * d, d});
  }
  return s;
}

factor_snapshot view(state_pointer self, wals_side side, uint64_t known) {
  auto& s = rows_of(self, side);
  if (known == s.version)
    return {s.version, {}};
  return {s.version, shared_floats{s.current}};
}

factor_snapshot view_rows(state_pointer self, wals_side side, uint64_t known, uint64_t first,
                          uint64_t count) {
  auto& s = rows_of(self, side);
  if (known == s.version)
    return {s.version, {}};
  auto d = self->state.config.params.dim;
  first = std::min(first, s.rows);
  auto last = first + std::min(count, s.rows - first);
  auto rows = s.current->begin();
  return {s.version, shared_floats{std::vector<float>(rows + static_cast<ptrdiff_t>(first * d),
                                                      rows + static_cast<ptrdiff_t>(last * d))}};
}

/// write(epoch, side, first, rows, values); see factor_shard_actor.
caf::result<ok_atom> write(state_pointer self, uint64_t epoch, wals_side side, uint64_t first,
                           uint64_t rows, const shared_floats& block) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto& s = rows_of(self, side);
  if (auto err = check_open(st, epoch, side))
    return err;
  auto count = st.config.count;
  auto total = side == wals_side::rows ? st.config.rows : st.config.cols;
  if (first > total || rows > total - first)
    return make_error(errc::invalid_argument, "factor shard: rows " + std::to_string(first) +
                                                " .. " + std::to_string(first + rows) +
                                                " lie past the " + std::to_string(total) + " of " +
                                                to_string(side));
  auto skip = compute::first_owned_offset(first, st.config.index, count);
  auto owned = compute::rows_owned(rows, static_cast<uint32_t>(skip), count);
  auto values = block.values();
  // Where owned row k (id first + skip + k * count) sits in `values`.
  uint64_t start = skip, stride = count;
  if (values.size() != rows * d) {
    if (values.size() != owned * d)
      return make_error(errc::dimension_mismatch,
                        "factor shard: " + std::to_string(values.size()) + " values for " +
                          std::to_string(rows) + " rows, of which this shard owns " +
                          std::to_string(owned) + ", of dim " + std::to_string(d));
    start = 0;
    stride = 1;
  }
  for (uint64_t k = 0; k < owned; ++k)
    if (auto err = check_finite(values.subspan((start + k * stride) * d, d)))
      return err;
  auto local = compute::local_row(first + skip, count);
  for (uint64_t k = 0; k < owned; ++k)
    std::copy_n(values.data() + (start + k * stride) * d, d, s.pending->data() + (local + k) * d);
  return ok_atom::value;
}

ok_atom begin(state_pointer self, uint64_t epoch, wals_side side) {
  // Every row of the side is written before the phase commits, so pending needs no copy.
  auto& s = rows_of(self, side);
  // Huge pages: a block's solve reads the other side's rows at random.
  if (!s.pending || s.pending.use_count() > 1) {
    s.pending = std::make_shared<std::vector<float>>();
    stores::assign_on_huge_pages(*s.pending, s.current->size());
  }
  s.pending->resize(s.current->size());
  s.open_epoch = epoch;
  return ok_atom::value;
}

caf::result<ok_atom> commit(state_pointer self, uint64_t epoch, wals_side side) {
  auto& s = rows_of(self, side);
  if (epoch == 0 || epoch != s.open_epoch)
    return make_error(errc::invalid_argument, "factor shard: commit of epoch " +
                                                std::to_string(epoch) + ", which is not open");
  // The replaced rows go: a side holds one buffer between its phases, so a shard's memory is
  // its rows of U and V plus one side's while that side's phase is open.
  s.current.swap(s.pending);
  s.pending.reset();
  s.open_epoch = 0;
  ++s.version;
  return ok_atom::value;
}

std::vector<float> gram(state_pointer self, wals_side side) {
  auto d = self->state.config.params.dim;
  auto& s = rows_of(self, side);
  std::vector<float> result(size_t{d} * d, 0.0f);
  compute::add_gramian({s.current->data(), s.rows, d}, result);
  return result;
}

caf::result<std::vector<file_info>> save(state_pointer self, const std::string& root,
                                         const std::string& id) {
  auto& c = self->state.config;
  std::vector<file_info> parts;
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto& s = rows_of(self, side);
    auto part = stores::write_factor_part(stores::checkpoint_dir{root}, id, side, c.index, c.count,
                                          {s.rows, c.params.dim, *s.current});
    if (!part)
      return std::move(part.error());
    parts.push_back(std::move(*part));
  }
  return parts;
}

caf::result<ok_atom> load(state_pointer self, const std::string& root,
                          const checkpoint_manifest& manifest) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  std::array<std::vector<float>, 2> loaded;
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto& s = rows_of(self, side);
    auto m = stores::read_factor_part(stores::checkpoint_dir{root}, manifest, side, st.config.index,
                                      st.config.count);
    if (!m)
      return std::move(m.error());
    if (m->rows != s.rows || m->cols != d)
      return make_error(errc::corrupt_file, root + ": the " + to_string(side) + " part of shard " +
                                              std::to_string(st.config.index) + " holds " +
                                              std::to_string(m->rows) + " x " +
                                              std::to_string(m->cols) + ", this shard needs " +
                                              std::to_string(s.rows) + " x " + std::to_string(d));
    loaded[side_index(side)] = std::move(m->values);
  }
  for (size_t i = 0; i < 2; ++i) {
    st.sides[i].current = std::make_shared<std::vector<float>>(std::move(loaded[i]));
    stores::advise_huge_pages(st.sides[i].current->data(),
                              st.sides[i].current->size() * sizeof(float), true);
    st.sides[i].pending = nullptr;
    st.sides[i].open_epoch = 0;
    ++st.sides[i].version;
  }
  return ok_atom::value;
}

} // namespace

factor_shard_actor::behavior_type factor_shard(state_pointer self, wals_shard_config config) {
  auto& st = self->state;
  st.config = config;
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto total = side == wals_side::rows ? config.rows : config.cols;
    st.sides[side_index(side)].rows = compute::rows_owned(total, config.index, config.count);
  }
  return {
    [=](view_atom, wals_side side, uint64_t known) { return view(self, side, known); },
    [=](view_atom, wals_side side, uint64_t known, uint64_t first, uint64_t count) {
      return view_rows(self, side, known, first, count);
    },
    [=](write_atom, uint64_t epoch, wals_side side, uint64_t first, uint64_t rows,
        const shared_floats& values) { return write(self, epoch, side, first, rows, values); },
    [=](begin_atom, uint64_t epoch, wals_side side) { return begin(self, epoch, side); },
    [=](commit_atom, uint64_t epoch, wals_side side) { return commit(self, epoch, side); },
    [=](gram_atom, wals_side side) { return gram(self, side); },
    [=](save_atom, const std::string& root, const std::string& id) { return save(self, root, id); },
    [=](load_atom, const std::string& root, const checkpoint_manifest& manifest) {
      return load(self, root, manifest);
    },
  };
}

} // namespace darcy::actors
