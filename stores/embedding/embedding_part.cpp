#include "stores/embedding/embedding_part.hpp"

#include <filesystem>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include "messages/checkpoint.capnp.h"
#include "messages/error.hpp"
#include "stores/checkpoint/capnp_bytes.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/embedding/shard_file.hpp"

namespace darcy::stores {

caf::expected<file_info> write_shard_file(const std::string& dir, const std::string& rel_path,
                                          const de_config& cfg, embedding_store& store) {
  capnp::MallocMessageBuilder message;
  auto rows = fill_shard_file(message, cfg.name, store);
  if (!rows)
    return std::move(rows.error());
  return checkpoint_dir{dir}.write_part(rel_path, flat_bytes(message), *rows);
}

caf::expected<file_info> write_delta_file(const std::string& dir, const std::string& rel_path,
                                          const de_config& cfg, embedding_store& store,
                                          std::span<const std::string_view> keys) {
  capnp::MallocMessageBuilder message;
  auto rows = fill_delta_file(message, cfg.name, store, keys);
  if (!rows)
    return std::move(rows.error());
  return checkpoint_dir{dir}.write_part(rel_path, flat_bytes(message), *rows);
}

caf::expected<bool> read_shard_part(const std::string& dir, const file_info& file,
                                    const de_config& cfg,
                                    const std::function<caf::error(const row_record&)>& f,
                                    const std::function<caf::error(std::string_view)>& deleted) {
  auto path = (std::filesystem::path{dir} / file.path).string();
  auto bytes = checkpoint_dir{dir}.read_part(file);
  if (!bytes)
    return std::move(bytes.error());
  auto words = to_words(*bytes, path);
  if (!words)
    return std::move(words.error());
  try {
    capnp::FlatArrayMessageReader reader{*words, reader_options(words->size())};
    auto part = reader.getRoot<ShardFile>();
    if (auto err = for_each_shard_row(part, cfg.dim, path, f))
      return err;
    for (auto key : part.getDeleted())
      if (auto err = deleted({reinterpret_cast<const char*>(key.begin()), key.size()}))
        return err;
    return part.getDelta();
  } catch (const kj::Exception& e) {
    return make_error(errc::corrupt_file, path + ": " + e.getDescription().cStr());
  }
}

caf::error read_shard_file(const std::string& dir, const file_info& file, const de_config& cfg,
                           const std::function<caf::error(const row_record&)>& f) {
  auto read = read_shard_part(dir, file, cfg, f, [](std::string_view) { return caf::error{}; });
  return read ? caf::error{} : std::move(read.error());
}

} // namespace darcy::stores
