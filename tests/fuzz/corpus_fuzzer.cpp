// The word2vec corpus reader (apps/word2vec/corpus), plain text or Brown's tagged format as the
// first byte's low bit says.
#include "apps/word2vec/corpus.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  auto format =
    (data[0] & 1) ? darcy::word2vec::corpus_format::brown : darcy::word2vec::corpus_format::text;
  auto c =
    darcy::word2vec::parse_corpus(darcy::fuzz::as_string(data + 1, size - 1), format, "fuzz");
  (void)c;
  return 0;
}
