// The embedding shard file reader (stores/checkpoint_io): rows of an embedding whose dim and
// optimizer come from the first byte, as the manifest would give them.
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  darcy::de_config cfg;
  cfg.name = "fuzz";
  cfg.dim = 1 + data[0] % 8;
  cfg.optimizer.kind = (data[0] & 0x80) ? darcy::optimizer_kind::adam : darcy::optimizer_kind::sgd;
  darcy::fuzz::write_input("part", darcy::fuzz::as_string(data + 1, size - 1));
  uint64_t rows = 0;
  auto err = darcy::stores::read_shard_file(darcy::fuzz::scratch_dir(), {"part", 0, 0, 0}, cfg,
                                            [&](const darcy::stores::row_record&) {
                                              ++rows;
                                              return caf::error{};
                                            });
  (void)err;
  return 0;
}
