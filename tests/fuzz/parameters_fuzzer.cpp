// The dense parameter part decoder (stores/parameter_part): Estimator and MoE checkpoints.
#include "stores/checkpoint/parameter_part.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto values = darcy::stores::decode_named_values(darcy::fuzz::as_string(data, size));
  (void)values;
  return 0;
}
