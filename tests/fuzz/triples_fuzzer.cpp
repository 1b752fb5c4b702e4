// The WALS triples reader (stores/wals_data): tsv, csv or lastfm as the first byte says, with
// malformed lines skipped or refused, and a hold-out when its high bit is set.
#include "stores/data/wals_data.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  static const char* formats[] = {"tsv", "csv", "lastfm"};
  darcy::wals_data_spec spec;
  spec.format = formats[data[0] % 3];
  spec.skip_malformed = (data[0] & 0x40) != 0;
  spec.holdout = (data[0] & 0x80) ? 0.2f : 0.0f;
  spec.path = darcy::fuzz::write_input("triples", darcy::fuzz::as_string(data + 1, size - 1));
  auto d = darcy::stores::load_dataset(spec);
  (void)d;
  return 0;
}
