// Helpers shared by the tests: where the read-only project data lives.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tessera/backend_options.h"

namespace tessera::testing {

// Options of a CPU backend with `threads` threads on `isa` (default: the best).
inline BackendOptions cpu_backend(int threads, std::optional<Isa> isa = std::nullopt) {
  BackendOptions o;
  o.threads = threads;
  o.isa = isa;
  return o;
}

// The shared data folder: $TESSERA_SHARED_DIR, else ../shared next to the source tree.
std::string shared_dir();
// shared_dir() + "/" + relative.
std::string shared_path(const std::string& relative);
bool file_exists(const std::string& path);
// True when TESSERA_SKIP_MISSING_DATA=1: the explicit opt-out from shared data.
bool skip_missing_data();
// The message a test fails with when `path` is missing.
std::string missing_data_message(const std::string& path);

}  // namespace tessera::testing

// Declares `const std::string var` = path of `relative` under the shared data
// folder. If the file is missing the test fails saying where to put the data,
// or is skipped when TESSERA_SKIP_MISSING_DATA=1.
#define TESSERA_REQUIRE_SHARED_FILE(var, relative)                                  \
  const std::string var = ::tessera::testing::shared_path(relative);                \
  if (!::tessera::testing::file_exists(var)) {                                      \
    if (::tessera::testing::skip_missing_data()) GTEST_SKIP() << "missing " << var; \
    FAIL() << ::tessera::testing::missing_data_message(var);                        \
  }
