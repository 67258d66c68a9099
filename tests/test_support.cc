#include "test_support.h"

#include <cstdlib>
#include <filesystem>

namespace tessera::testing {

std::string shared_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED_DIR")) return env;
  return TESSERA_DEFAULT_SHARED_DIR;
}

std::string shared_path(const std::string& relative) { return shared_dir() + "/" + relative; }

bool file_exists(const std::string& path) { return std::filesystem::exists(path); }

bool skip_missing_data() {
  const char* skip = std::getenv("TESSERA_SKIP_MISSING_DATA");
  return skip != nullptr && std::string(skip) == "1";
}

std::string missing_data_message(const std::string& path) {
  return "test data not found: " + path +
         "\nPut the project's shared data folder at ../shared next to the repository, or set "
         "TESSERA_SHARED_DIR to it (TESSERA_SKIP_MISSING_DATA=1 skips these tests instead).";
}

}  // namespace tessera::testing
