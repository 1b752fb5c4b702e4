#include "stores/checkpoint/shard_file.hpp"

#include <vector>

#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<uint64_t> fill_shard_file(capnp::MessageBuilder& message, const std::string& name,
                                        embedding_store& store) {
  auto file = message.initRoot<ShardFile>();
  file.setEmbedding(name);
  file.setDim(static_cast<uint32_t>(store.dim()));
  file.setSlotCount(static_cast<uint32_t>(store.slot_count()));
  // Rows are counted first: a Cap'n Proto list is sized when it is created.
  uint64_t count = 0;
  if (auto err = store.export_rows([&](const row_record&) { ++count; }))
    return err;
  auto rows = file.initRows(static_cast<unsigned>(count));
  unsigned i = 0;
  auto err = store.export_rows([&](const row_record& r) {
    if (i >= count)
      return;
    auto row = rows[i++];
    row.setKey(capnp::Data::Reader{reinterpret_cast<const kj::byte*>(r.key.data()), r.key.size()});
    write_floats(row.initValues(static_cast<unsigned>(r.values.size())), r.values);
    write_floats(row.initSlots(static_cast<unsigned>(r.slots.size())), r.slots);
    row.setFrequency(r.frequency);
    row.setUpdates(r.updates);
    row.setLastUpdate(r.last_update);
  });
  if (err)
    return err;
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
