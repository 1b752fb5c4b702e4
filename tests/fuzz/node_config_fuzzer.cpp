// The node's TOML config reader (runtime/node_options), then the check of what it read.
#include "runtime/node_options.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto path = darcy::fuzz::write_input("node.toml", darcy::fuzz::as_string(data, size));
  darcy::runtime::node_options opts;
  if (!darcy::runtime::load_node_config(path, opts))
    (void)darcy::runtime::validate(opts);
  return 0;
}
