// The checkpoint manifest reader (stores/checkpoint_io). The first byte's low bit appends a
// valid checksum trailer, so that the parser behind the checksum is reached too.
#include <cstring>

#include "compute/hash.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  auto bytes = darcy::fuzz::as_string(data + 1, size - 1);
  if (data[0] & 1) {
    uint64_t sum = darcy::compute::hash_key(bytes);
    bytes += "DRCYMSUM";
    bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  }
  darcy::fuzz::write_input(darcy::stores::manifest_name, bytes);
  auto manifest = darcy::stores::read_manifest(darcy::fuzz::scratch_dir());
  (void)manifest;
  return 0;
}
