// The serving front end's request bodies (apps/serving/json_codec): top-k queries and version
// loads, as POST /v1/models/{name}:topk and :load receive them.
#include "apps/serving/json_codec.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto body = darcy::fuzz::as_string(data, size);
  darcy::serving::serve_config config;
  auto topk = darcy::serving::parse_topk_body(body, config);
  auto load = darcy::serving::parse_load_body(body);
  (void)topk;
  (void)load;
  return 0;
}
