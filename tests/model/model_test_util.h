// Helpers for model tests: random-weight models written to temporary files.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

#include "core/thread_pool.h"
#include "model/model.h"
#include "model/random_model.h"

namespace tessera::testing {

// Writes a random model of `shape` to a temp file and loads it.
inline std::unique_ptr<Model> load_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed) {
  ThreadPool pool(1);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tessera_test_" + shape.name + "_" + dtype_name(dtype) + "_" + std::to_string(seed) + "_" +
                             std::to_string(::getpid()) + ".gguf"))
                               .string();
  const Status st = write_random_model(shape, dtype, seed, pool, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto m = Model::load(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

}  // namespace tessera::testing
