// BackendOptions: which backend runs the model and its switches. Passed from
// the CLI (flags, and the TESSERA_* environment aliases it reads) or an
// embedding program (tessera/engine.h); the library reads no environment variable itself.
#pragma once

#include <optional>
#include <string>

#include "tessera/isa.h"

namespace tessera {

struct BackendOptions {
  std::string device = "cpu";  // a backend this build has ("cpu"; see `tessera --version`)
  int threads = 1;             // CPU threads (the caller's included), >= 1
  // CPU: the SIMD path; nullopt = the best this CPU supports.
  // One the CPU lacks is an error at create time (the CLI's TESSERA_ISA
  // alias only ever lowers the path, so it never asks for one).
  std::optional<Isa> isa;
  // CPU: use the register-tiled kernels and the x16 weight layout where the
  // ISA has them (AVX-512 VNNI). Off: one dot product per (row, token).
  bool tile_kernels = true;
  // CPU: concurrent row streams per thread for decode, 1..4 (1 = one
  // stream over a static share of rows).
  int decode_streams = 4;
};

}  // namespace tessera
