// A main() for fuzz targets built without libFuzzer (the default and asan
// configs): runs LLVMFuzzerTestOneInput on every file named on the command
// line or found (recursively) in a named directory, so the seed corpus and
// the crash regressions run as ordinary tests under any compiler.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path path(argv[i]);
    if (fs::is_directory(path)) {
      for (const auto& e : fs::recursive_directory_iterator(path)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(path);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                           bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}

// The structured fuzzer's mutator calls libFuzzer's byte mutator, which is
// absent here; replays never mutate.
extern "C" size_t LLVMFuzzerMutate(uint8_t*, size_t size, size_t) {
  return size;
}
