#include "version.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli_common.h"
#include "tessera/parallel.h"
#include "tessera/system.h"

namespace tessera::cli {

extern const char* const kGitCommit;  // build_info.cc, generated at build time

namespace {

std::string compiler() {
#if defined(__clang__)
  return fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown compiler";
#endif
}

std::string join(const std::vector<Isa>& isas) {
  std::string out;
  for (Isa isa : isas) out += (out.empty() ? "" : ", ") + std::string(isa_name(isa));
  return out;
}

}  // namespace

std::string version_text() {
  // Every x86-64 build compiles all four kernel paths (cmake/compiler_flags.cmake) and picks one
  // at run time from CPUID (tessera/isa.h).
  const std::vector<Isa> compiled = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512};
  return fmt::format(
      "tessera {}\n"
      "commit:      {}\n"
      "build:       {}, {}, C++{}{}\n"
      "backends:    {}\n"
      "parallel:    {}\n"
      "cpu kernels: {} (compiled; chosen at run time)\n"
      "this cpu:    {} (runs {}; AVX-512 VNNI {}; AVX512-BF16 {}; {} physical cores)",
      TESSERA_VERSION, kGitCommit, TESSERA_BUILD_TYPE, compiler(), __cplusplus / 100 % 100,
      TESSERA_SANITIZED ? ", ASan+UBSan" : "", fmt::join(device_names(), ", "),
      parallel_available() ? "mpi (mpirun -np T*P tessera ... --tensor-parallel-size T --pipeline-parallel-size P)"
                           : "none (built without MPI)",
      join(compiled), isa_name(isa_from_environment()), join(supported_isas()), cpu_has_avx512_vnni() ? "yes" : "no",
      cpu_has_avx512_bf16() ? "yes" : "no", physical_cores());
}

}  // namespace tessera::cli
