#include "actors/wals/factor_shard.hpp"

#include <cmath>
#include <filesystem>
#include <span>

#include "compute/placement.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "stores/matrix_file.hpp"

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

} // namespace

std::string factor_file(const std::string& dir, uint32_t sweep, wals_side side, uint32_t index,
                        uint32_t count) {
  return dir + "/sweep-" + std::to_string(sweep) + "/" + to_string(side) + "-" +
         std::to_string(index) + "-of-" + std::to_string(count) + ".f32";
}

factor_shard_actor::behavior_type factor_shard(state_pointer self, wals_shard_config config) {
  auto& st = self->state;
  st.config = config;
  auto d = config.params.dim;
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto& s = st.sides[side_index(side)];
    auto total = side == wals_side::rows ? config.rows : config.cols;
    s.rows = compute::rows_owned(total, config.index, config.count);
    s.current = std::make_shared<std::vector<float>>(s.rows * d);
    for (uint64_t i = 0; i < s.rows; ++i)
      compute::initial_row(config.params, side, compute::global_id(i, config.index, config.count),
                           {s.current->data() + i * d, d});
  }
  return {
    [=](fetch_atom, wals_side side, const std::vector<uint32_t>& ids)
      -> caf::result<shared_floats> {
      auto& st = self->state;
      if (auto err = check_ids(st, side, ids))
        return err;
      auto& s = st.sides[side_index(side)];
      std::vector<float> out(ids.size() * d);
      for (size_t i = 0; i < ids.size(); ++i)
        std::copy_n(s.current->data() + compute::local_row(ids[i], st.config.count) * d, d,
                    out.data() + i * d);
      return shared_floats{std::move(out)};
    },
    [=](view_atom, wals_side side) -> shared_floats {
      return shared_floats{self->state.sides[side_index(side)].current};
    },
    [=](write_atom, uint64_t epoch, wals_side side, const std::vector<uint32_t>& ids,
        const std::vector<float>& values) -> caf::result<ok_atom> {
      auto& st = self->state;
      auto& s = st.sides[side_index(side)];
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
    },
    [=](write_atom, uint64_t epoch, wals_side side, uint64_t first,
        const shared_floats& block) -> caf::result<ok_atom> {
      auto& st = self->state;
      auto& s = st.sides[side_index(side)];
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
                            std::to_string(first + rows) + " lie past the " +
                            std::to_string(total) + " of " + to_string(side));
      // The rows this shard owns: ids first + skip, then every count-th.
      auto skip = compute::first_owned_offset(first, st.config.index, count);
      for (auto r = skip; r < rows; r += count)
        if (auto err = check_finite(values.subspan(r * d, d)))
          return err;
      for (auto r = skip; r < rows; r += count)
        std::copy_n(values.data() + r * d, d, s.pending->data() + compute::local_row(first + r, count) * d);
      return ok_atom::value;
    },
    [=](begin_atom, uint64_t epoch, wals_side side) -> ok_atom {
      // Every row of the side is written before the phase commits, so pending needs no copy.
      auto& s = self->state.sides[side_index(side)];
      if (!s.pending || s.pending.use_count() > 1)
        s.pending = std::make_shared<std::vector<float>>();
      s.pending->resize(s.current->size());
      s.open_epoch = epoch;
      return ok_atom::value;
    },
    [=](commit_atom, uint64_t epoch, wals_side side) -> caf::result<ok_atom> {
      auto& s = self->state.sides[side_index(side)];
      if (epoch == 0 || epoch != s.open_epoch)
        return make_error(errc::invalid_argument,
                          "factor shard: commit of epoch " + std::to_string(epoch) +
                            ", which is not open");
      s.current.swap(s.pending);
      s.open_epoch = 0;
      return ok_atom::value;
    },
    [=](gram_atom, wals_side side) -> std::vector<float> {
      auto& s = self->state.sides[side_index(side)];
      std::vector<float> gram(size_t{d} * d, 0.0f);
      compute::add_gramian({s.current->data(), s.rows, d}, gram);
      return gram;
    },
    [=](save_atom, const std::string& dir, uint32_t sweep) -> caf::result<ok_atom> {
      auto& st = self->state;
      std::error_code ec;
      std::filesystem::create_directories(dir + "/sweep-" + std::to_string(sweep), ec);
      for (auto side : {wals_side::rows, wals_side::cols}) {
        auto& s = st.sides[side_index(side)];
        auto path = factor_file(dir, sweep, side, st.config.index, st.config.count);
        if (auto err = stores::write_matrix_file(path, {s.rows, d, *s.current}))
          return err;
      }
      return ok_atom::value;
    },
    [=](load_atom, const std::string& dir, uint32_t sweep) -> caf::result<ok_atom> {
      auto& st = self->state;
      std::array<std::vector<float>, 2> loaded;
      for (auto side : {wals_side::rows, wals_side::cols}) {
        auto& s = st.sides[side_index(side)];
        auto path = factor_file(dir, sweep, side, st.config.index, st.config.count);
        auto m = stores::read_matrix_file(path);
        if (!m)
          return std::move(m.error());
        if (m->rows != s.rows || m->cols != d)
          return make_error(errc::corrupt_file, path + ": holds " + std::to_string(m->rows) +
                                                  " x " + std::to_string(m->cols) +
                                                  ", this shard needs " + std::to_string(s.rows) +
                                                  " x " + std::to_string(d));
        loaded[side_index(side)] = std::move(m->values);
      }
      for (size_t i = 0; i < 2; ++i) {
        st.sides[i].current = std::make_shared<std::vector<float>>(std::move(loaded[i]));
        st.sides[i].pending = nullptr;
        st.sides[i].open_epoch = 0;
      }
      return ok_atom::value;
    },
  };
}

} // namespace darcy::actors
