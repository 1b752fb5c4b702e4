#include "stores/embedding/shard_file.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

capnp::Data::Reader data_of(std::string_view bytes) {
  return {reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()};
}

ShardFile::Builder start_file(capnp::MessageBuilder& message, const std::string& name,
                              embedding_store& store) {
  auto file = message.initRoot<ShardFile>();
  file.setEmbedding(name);
  file.setDim(static_cast<uint32_t>(store.dim()));
  file.setSlotCount(static_cast<uint32_t>(store.slot_floats() / store.dim()));
  file.setSlotFloats(static_cast<uint32_t>(store.slot_floats()));
  return file;
}

void set_row(Row::Builder row, const row_record& r) {
  row.setKey(data_of(r.key));
  write_floats(row.initValues(static_cast<unsigned>(r.values.size())), r.values);
  write_floats(row.initSlots(static_cast<unsigned>(r.slots.size())), r.slots);
  row.setFrequency(r.frequency);
  row.setUpdates(r.updates);
  row.setLastUpdate(r.last_update);
}

} // namespace

caf::expected<uint64_t> fill_shard_file(capnp::MessageBuilder& message, const std::string& name,
                                        embedding_store& store) {
  auto file = start_file(message, name, store);
  // Rows are counted first: a Cap'n Proto list is sized when it is created.
  uint64_t count = 0;
  if (auto err = store.export_rows([&](const row_record&) { ++count; }))
    return err;
  auto rows = file.initRows(static_cast<unsigned>(count));
  unsigned i = 0;
  auto err = store.export_rows([&](const row_record& r) {
    if (i < count)
      set_row(rows[i++], r);
  });
  if (err)
    return err;
  return uint64_t{i};
}

caf::expected<uint64_t> fill_delta_file(capnp::MessageBuilder& message, const std::string& name,
                                        embedding_store& store,
                                        std::span<const std::string_view> keys) {
  auto file = start_file(message, name, store);
  file.setDelta(true);
  // A row's key is only valid inside the call (a scanning store reads it into a buffer).
  std::vector<std::string> found;
  std::vector<std::string_view> absent;
  auto err = store.export_keys(
    keys, [&](const row_record& r) { found.emplace_back(r.key); },
    [&](std::string_view key) { absent.push_back(key); });
  if (err)
    return err;
  std::vector<std::string_view> present(found.begin(), found.end());
  // The second pass reads the rows present in the first: nothing changes the store between.
  auto rows = file.initRows(static_cast<unsigned>(present.size()));
  unsigned i = 0;
  err = store.export_keys(
    present,
    [&](const row_record& r) {
      if (i < present.size())
        set_row(rows[i++], r);
    },
    [](std::string_view) {});
  if (err)
    return err;
  auto deleted = file.initDeleted(static_cast<unsigned>(absent.size()));
  for (unsigned d = 0; d < absent.size(); ++d)
    deleted.set(d, data_of(absent[d]));
  return uint64_t{i};
}

caf::error for_each_shard_row(ShardFile::Reader file, uint32_t dim, const std::string& context,
                              const std::function<caf::error(const row_record&)>& f) {
  if (file.getDim() != dim)
    return make_error(errc::dimension_mismatch, context + ": dim " + std::to_string(file.getDim()) +
                                                  ", expected " + std::to_string(dim));
  std::vector<float> values, slots;
  for (auto row : file.getRows()) {
    auto key = row.getKey();
    read_floats(row.getValues(), values);
    read_floats(row.getSlots(), slots);
    row_record r{{reinterpret_cast<const char*>(key.begin()), key.size()},
                 values,
                 slots,
                 row.getFrequency(),
                 row.getUpdates(),
                 row.getLastUpdate()};
    if (auto err = f(r))
      return err;
  }
  return {};
}

caf::error import_shard_file(ShardFile::Reader file, embedding_store& store,
                             const std::string& context) {
  return for_each_shard_row(file, static_cast<uint32_t>(store.dim()), context,
                            [&](const row_record& r) { return store.import_row(r); });
}

} // namespace darcy::stores
