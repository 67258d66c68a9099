// BackendOptions: which backend runs the model and its switches. Passed from
// the CLI (flags, and the TESSERA_* environment aliases it reads) or an
// embedding program (tessera/engine.h); the library reads no environment variable itself.
#pragma once

#include <optional>
#include <string>

#include "tessera/isa.h"

namespace tessera {

// CPU: how F16 (and, without AVX512-BF16, BF16) weight matrices are
// multiplied (BackendOptions::f16_matmul). The output head always keeps its
// file weights and f32 activations; the scalar path is always exact.
enum class F16Matmul {
  // On the avx512 path of a CPU with AVX512-BF16 (Zen 4, Sapphire Rapids and
  // later): F16 as bf16. Each weight is rounded once, at load, to bf16
  // (round to nearest even; 8 significant bits instead of f16's 11),
  // activations to bf16 per product, and vdpbf16ps multiplies pairs at twice
  // the f32 FMA rate with f32 accumulation. vLLM's CPU backend likewise runs
  // float16 models in bfloat16 (BF16 matrices take this path either way:
  // their weights are already bf16).
  // On the avx2 paths, and on avx512 without AVX512-BF16: F16 and BF16 as
  // int16. Each row is quantized at load per group of 64 columns to int16
  // quants |q| <= 2047 and one f32 scale, the activations per token the same
  // way to |q| <= 16383, and vpmaddwd / vpdpwssd sum each group exactly in
  // int32 (gemm_i16_ref.h). The costs on the fixtures are in
  // docs/quantization.md (rounds 14, 18 and 20).
  kAuto = 0,
  // The weights exactly: F16 / BF16 widened to f32, f32 activations, f32
  // FMAs (BF16 matrices on AVX512-BF16 keep their bf16 panels, above).
  kF16 = 1,
};

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
  // CPU: F16 weight matrices as bf16 where the CPU has AVX512-BF16, F16 and
  // BF16 as int16 where it has not (kAuto), or exactly (kF16). See F16Matmul.
  F16Matmul f16_matmul = F16Matmul::kAuto;
};

}  // namespace tessera
