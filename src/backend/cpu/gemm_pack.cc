#include "backend/cpu/gemm_pack.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/weight_layout.h"

namespace tessera::cpu::detail {

void pack_q8x16_with(QuantizeQ8_0Fn quantize, const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t groups = (nb + kX16Blocks - 1) / kX16Blocks;
  BlockQ8_0 blk[kX16Blocks];
  for (int64_t g = 0; g < groups; ++g) {
    const int have = static_cast<int>(std::min<int64_t>(kX16Blocks, nb - g * kX16Blocks));
    quantize(x + g * kX16Blocks * kQuantBlockElems, blk, int64_t{have} * kQuantBlockElems);
    PackedQ8x16Group& p = out[g];
    std::memset(&p, 0, sizeof(p));
    for (int b = 0; b < have; ++b) {
      int32_t sum = 0;
      for (int k = 0; k < 8; ++k) {
        std::memcpy(&p.q[k][4 * b], blk[b].qs + 4 * k, 4);
        for (int i = 0; i < 4; ++i) sum += blk[b].qs[4 * k + i];
      }
      p.d[b] = fp16_to_fp32(blk[b].d);
      p.offset_sum[b] = -offset * sum;
    }
  }
}

void pack_q8k_with(QuantizeQ8_KFn quantize, const float* x, PackedQ8KGroup* out, int64_t n) {
  const int64_t nb = n / kSuperBlockElems;
  const int64_t groups = (nb + kX16SuperBlocks - 1) / kX16SuperBlocks;
  BlockQ8_K blk[kX16SuperBlocks];
  for (int64_t g = 0; g < groups; ++g) {
    const int have = static_cast<int>(std::min<int64_t>(kX16SuperBlocks, nb - g * kX16SuperBlocks));
    quantize(x + g * kX16SuperBlocks * kSuperBlockElems, blk, int64_t{have} * kSuperBlockElems);
    PackedQ8KGroup& p = out[g];
    std::memset(&p, 0, sizeof(p));
    for (int s = 0; s < have; ++s) {
      for (int c = 0; c < 4; ++c) {
        const int lane = 4 * s + c;
        const int8_t* q = blk[s].qs + 64 * c;
        for (int k = 0; k < 8; ++k) {
          std::memcpy(&p.lo[k][4 * lane], q + 4 * k, 4);
          std::memcpy(&p.hi[k][4 * lane], q + 32 + 4 * k, 4);
        }
        const int16_t* bs = blk[s].bsums + 4 * c;  // sums of 16 quants each
        p.d[lane] = blk[s].d;
        p.sum_lo[lane] = static_cast<float>(bs[0] + bs[1]);
        p.sum_hi[lane] = static_cast<float>(bs[2] + bs[3]);
        for (int j = 0; j < 4; ++j) p.bsums[j / 2][2 * lane + j % 2] = bs[j];
      }
    }
  }
}

}  // namespace tessera::cpu::detail
