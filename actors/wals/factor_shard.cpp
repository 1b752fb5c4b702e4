#include "actors/wals/factor_shard.hpp"

#include <cmath>
#include <span>

#include "compute/placement.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "stores/wals_checkpoint.hpp"

namespace darcy::actors {

namespace {

using state_pointer = factor_shard_actor::stateful_pointer<factor_shard_state>;

size_t side_index(wals_side side) { return side == wals_side::rows ? 0 : 1; }

/// Checks that every id belongs to this shard and lies inside its side.
caf::error check_ids(const factor_shard_state& st, wals_side side,
                     const std::vector<uint32_t>& ids) {
  auto& c = st.config;
  auto& rows = st.sides[side_index(side)];
  for (auto id : ids)
    if (compute::shard_of(id, c.count) != c.index || compute::local_row(id, c.count) >= rows.rows)
      return make_error(errc::invalid_argument, "factor shard " + std::to_string(c.index) +
                                                  " does not own " + to_string(side) + " id " +
                                                  std::to_string(id));
  return {};
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
  for (auto v : row)
    if (!std::isfinite(v))
      return make_error(errc::non_finite, "factor shard: a written row is not finite");
  return {};
}

using side_rows = factor_shard_state::side_rows;

side_rows& rows_of(state_pointer self, wals_side side) {
  return self->state.sides[side_index(side)];
}

caf::result<shared_floats> fetch(state_pointer self, wals_side side,
                                 const std::vector<uint32_t>& ids) {
  auto& st = self->state;
  if (auto err = check_ids(st, side, ids))
    return err;
  auto d = st.config.params.dim;
  auto& s = rows_of(self, side);
  std::vector<float> out(ids.size() * d);
  for (size_t i = 0; i < ids.size(); ++i)
    std::copy_n(s.current->data() + compute::local_row(ids[i], st.config.count) * d, d,
                out.data() + i * d);
  return shared_floats{std::move(out)};
}

caf::result<ok_atom> write_rows(state_pointer self, uint64_t epoch, wals_side side,
                                const std::vector<uint32_t>& ids,
                                const std::vector<float>& values) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto& s = rows_of(self, side);
  if (auto err = check_open(st, epoch, side))
    return err;
  if (values.size() != ids.size() * d)
    return make_error(errc::dimension_mismatch,
                      "factor shard: " + std::to_string(values.size()) + " values for " +
                        std::to_string(ids.size()) + " rows of dim " + std::to_string(d));
  if (auto err = check_ids(st, side, ids))
    return err;
  if (auto err = check_finite(values))
    return err;
  for (size_t i = 0; i < ids.size(); ++i)
    std::copy_n(values.data() + i * d, d,
                s.pending->data() + compute::local_row(ids[i], st.config.count) * d);
  return ok_atom::value;
}

caf::result<ok_atom> write_block(state_pointer self, uint64_t epoch, wals_side side,
                                 uint64_t first, const shared_floats& block) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto& s = rows_of(self, side);
  if (auto err = check_open(st, epoch, side))
    return err;
  auto values = block.values();
  if (values.size() % d != 0)
    return make_error(errc::dimension_mismatch,
                      "factor shard: a block of " + std::to_string(values.size()) +
                        " values is not made of rows of dim " + std::to_string(d));
  auto rows = values.size() / d;
  auto count = st.config.count;
  auto total = side == wals_side::rows ? st.config.rows : st.config.cols;
  if (first > total || rows > total - first)
    return make_error(errc::invalid_argument,
                      "factor shard: rows " + std::to_string(first) + " .. " +
                        std::to_string(first + rows) + " lie past the " + std::to_string(total) +
                        " of " + to_string(side));
  auto skip = compute::first_owned_offset(first, st.config.index, count);
  for (auto r = skip; r < rows; r += count)
    if (auto err = check_finite(values.subspan(r * d, d)))
      return err;
  for (auto r = skip; r < rows; r += count)
    std::copy_n(values.data() + r * d, d,
                s.pending->data() + compute::local_row(first + r, count) * d);
  return ok_atom::value;
}

ok_atom begin(state_pointer self, uint64_t epoch, wals_side side) {
  // Every row of the side is written before the phase commits, so pending needs no copy.
  auto& s = rows_of(self, side);
  if (!s.pending || s.pending.use_count() > 1)
    s.pending = std::make_shared<std::vector<float>>();
  s.pending->resize(s.current->size());
  s.open_epoch = epoch;
  return ok_atom::value;
}

caf::result<ok_atom> commit(state_pointer self, uint64_t epoch, wals_side side) {
  auto& s = rows_of(self, side);
  if (epoch == 0 || epoch != s.open_epoch)
    return make_error(errc::invalid_argument, "factor shard: commit of epoch " +
                                                std::to_string(epoch) + ", which is not open");
  s.current.swap(s.pending);
  s.open_epoch = 0;
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
    auto part = stores::write_factor_part(stores::checkpoint_dir{root}, id, side, c.index,
                                          c.count, {s.rows, c.params.dim, *s.current});
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
    auto m = stores::read_factor_part(stores::checkpoint_dir{root}, manifest, side,
                                      st.config.index, st.config.count);
    if (!m)
      return std::move(m.error());
    if (m->rows != s.rows || m->cols != d)
      return make_error(errc::corrupt_file,
                        root + ": the " + to_string(side) + " part of shard " +
                          std::to_string(st.config.index) + " holds " + std::to_string(m->rows) +
                          " x " + std::to_string(m->cols) + ", this shard needs " +
                          std::to_string(s.rows) + " x " + std::to_string(d));
    loaded[side_index(side)] = std::move(m->values);
  }
  for (size_t i = 0; i < 2; ++i) {
    st.sides[i].current = std::make_shared<std::vector<float>>(std::move(loaded[i]));
    st.sides[i].pending = nullptr;
    st.sides[i].open_epoch = 0;
  }
  return ok_atom::value;
}

} // namespace

factor_shard_actor::behavior_type factor_shard(state_pointer self, wals_shard_config config) {
  auto& st = self->state;
  st.config = config;
  auto d = config.params.dim;
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto& s = rows_of(self, side);
    auto total = side == wals_side::rows ? config.rows : config.cols;
    s.rows = compute::rows_owned(total, config.index, config.count);
    s.current = std::make_shared<std::vector<float>>(s.rows * d);
    for (uint64_t i = 0; i < s.rows; ++i)
      compute::initial_row(config.params, side, compute::global_id(i, config.index, config.count),
                           {s.current->data() + i * d, d});
  }
  return {
    [=](fetch_atom, wals_side side, const std::vector<uint32_t>& ids) {
      return fetch(self, side, ids);
    },
    [=](view_atom, wals_side side) { return shared_floats{rows_of(self, side).current}; },
    [=](write_atom, uint64_t epoch, wals_side side, const std::vector<uint32_t>& ids,
        const std::vector<float>& values) { return write_rows(self, epoch, side, ids, values); },
    [=](write_atom, uint64_t epoch, wals_side side, uint64_t first, const shared_floats& block) {
      return write_block(self, epoch, side, first, block);
    },
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
