// Runs a fuzz target over files, without libFuzzer: `make test` replays each target's committed
// corpus (seeds and every input that once crashed) through it with the ordinary build.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(argv[i])) {
      for (auto& entry : std::filesystem::directory_iterator{argv[i]})
        if (entry.is_regular_file())
          files.push_back(entry.path());
    } else {
      files.emplace_back(argv[i]);
    }
    for (auto& file : files) {
      std::ifstream in{file, std::ios::binary};
      std::string bytes{std::istreambuf_iterator<char>{in}, {}};
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  std::cout << "replayed " << inputs << " inputs" << std::endl;
  return inputs > 0 ? 0 : 1;
}
