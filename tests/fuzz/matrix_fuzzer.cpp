// The float matrix file decoder (stores/matrix_file): WALS factors and exported models.
#include "stores/checkpoint/matrix_file.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = darcy::stores::decode_matrix(darcy::fuzz::as_string(data, size), "fuzz.f32");
  (void)m;
  return 0;
}
