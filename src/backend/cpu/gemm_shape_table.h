// Compile-time dispatch of a tile kernel on its run-time shape, shared by the
// tile kernel sets (gemm_avx2.cc, gemm_avx512.cc): fn[r - 1][t - 1] is
// Inst<r, t>::run for every 1 <= r <= R, 1 <= t <= T. Constant-initialised
// (no code runs before the CPUID check has chosen a table).
#pragma once

#include <cstdint>

namespace tessera::cpu::detail {

template <typename Fn, int R, int T, template <int, int> class Inst>
struct ShapeTable {
  Fn fn[R][T];
  constexpr ShapeTable() : fn{} { fill<1>(); }
  template <int r>
  constexpr void fill() {
    if constexpr (r <= R) {
      fill_t<r, 1>();
      fill<r + 1>();
    }
  }
  template <int r, int t>
  constexpr void fill_t() {
    if constexpr (t <= T) {
      fn[r - 1][t - 1] = &Inst<r, t>::run;
      fill_t<r, t + 1>();
    }
  }
};

// The GemmKernels entry (gemm.h's tile_* signature) that runs `kTable`'s
// kernel for its rows × tokens: one instantiation per table instead of a
// hand-written forwarding function each.
template <const auto& kTable, typename W, typename X>
void tile_entry(const W* w, int64_t ws, int rows, const X* x, int64_t xs, int tokens, int64_t n, float* y, int64_t ys) {
  kTable.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}

}  // namespace tessera::cpu::detail
