#include "backend/cpu/weight_layout.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_i16_ref.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "core/check.h"
#include "core/mapped_file.h"
#include "core/quant_ref.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

constexpr size_t kWordBytes = 4;

// The fields before a 32-element block's quants, in GGUF order: the f16
// scale d, for Q4_1 / Q5_1 the f16 minimum m, for Q5_0 / Q5_1 the 32 fifth
// bits qh (weight_layout.h). Their sizes in bytes, 0 ending the list.
struct HeadFields {
  size_t size[4];
};
HeadFields head_fields(DType t) {
  switch (t) {
    case DType::kQ4_1:
      return {{2, 2, 0, 0}};
    case DType::kQ5_0:
      return {{2, 4, 0, 0}};
    case DType::kQ5_1:
      return {{2, 2, 4, 0}};
    default:  // Q4_0, Q8_0
      return {{2, 0, 0, 0}};
  }
}

// Moves one row between the layouts: to_x16 picks the GGUF block's pieces
// and places them at their x16 offsets, !to_x16 the reverse.
void convert_row(DType t, const uint8_t* src, uint8_t* dst, int64_t cols, bool to_x16) {
  const size_t block = dtype_block_bytes(t);
  const HeadFields fields = head_fields(t);
  size_t head = 0;
  for (size_t f : fields.size) head += f;
  const size_t words = (block - head) / kWordBytes;
  const int64_t nb = cols / dtype_block_elems(t);
  for (int64_t b0 = 0; b0 < nb; b0 += kX16Blocks) {
    const auto g = static_cast<size_t>(std::min<int64_t>(kX16Blocks, nb - b0));
    const size_t base = static_cast<size_t>(b0) * block;  // the group's first byte, both layouts
    for (size_t b = 0; b < g; ++b) {
      const size_t gguf_block = base + b * block;
      // Field f of block b: at offset `at` in its GGUF block, at
      // g * at + b * size in the group's x16 head (field-major).
      size_t at = 0;
      for (size_t f = 0; f < 4 && fields.size[f] != 0; at += fields.size[f], ++f) {
        const size_t gguf_field = gguf_block + at;
        const size_t x16_field = base + g * at + b * fields.size[f];
        std::memcpy(to_x16 ? dst + x16_field : dst + gguf_field, to_x16 ? src + gguf_field : src + x16_field,
                    fields.size[f]);
      }
      for (size_t k = 0; k < words; ++k) {
        const size_t gguf_word = gguf_block + head + k * kWordBytes;
        const size_t x16_word = base + g * head + (k * g + b) * kWordBytes;
        std::memcpy(to_x16 ? dst + x16_word : dst + gguf_word, to_x16 ? src + gguf_word : src + x16_word, kWordBytes);
      }
    }
  }
}

// Q4_K and Q5_K: groups of kX16SuperBlocks super-blocks (weight_layout.h).
constexpr size_t kQ4KEntryBytes = 3;

// Q5_K's fifth bits of lane (s, c) as two 32-bit words: bit l of word h is
// bit 2c + h of qh[l] (element 64c + 32h + l).
uint32_t q5_k_lane_bits(const uint8_t* qh, size_t c, size_t h) {
  uint32_t v = 0;
  for (uint32_t l = 0; l < 32; ++l) v |= ((uint32_t{qh[l]} >> (2 * c + h)) & 1u) << l;
  return v;
}

void convert_row_q45_k(DType t, const uint8_t* src, uint8_t* dst, int64_t cols, bool to_x16) {
  const bool five = t == DType::kQ5_K;
  const size_t kBlock = dtype_block_bytes(t);
  const size_t quants_at = x16_k_head_bytes(five);  // in a GGUF block and per super-block of an x16 group
  const int64_t nb = cols / kSuperBlockElems;
  for (int64_t b0 = 0; b0 < nb; b0 += kX16SuperBlocks) {
    const auto g = static_cast<size_t>(std::min<int64_t>(kX16SuperBlocks, nb - b0));
    const size_t lanes = 4 * g;                                  // chunks of 64 elements
    const uint8_t* in = src + static_cast<size_t>(b0) * kBlock;  // the group, both layouts
    uint8_t* out = dst + static_cast<size_t>(b0) * kBlock;
    // Copies n bytes between a GGUF offset and an x16 offset of the group.
    auto move = [&](size_t gguf, size_t x16, size_t n) {
      std::memcpy(out + (to_x16 ? x16 : gguf), in + (to_x16 ? gguf : x16), n);
    };
    for (size_t s = 0; s < g; ++s) {
      const size_t block = s * kBlock;
      move(block, 2 * s, 2);              // d
      move(block + 2, 2 * g + 2 * s, 2);  // dmin
      uint8_t sc[8], m[8];
      if (to_x16) {
        for (int j = 0; j < 8; ++j) q4k_scale_min(j, in + block + 4, &sc[j], &m[j]);
      } else if (five) {
        std::memset(out + block + 16, 0, 32);  // qh, rebuilt bit by bit below
      }
      for (size_t c = 0; c < 4; ++c) {
        const size_t lane = 4 * s + c;
        const size_t entry = 4 * g + kQ4KEntryBytes * lane;  // in the x16 group
        if (to_x16) {
          const uint32_t e = uint32_t{sc[2 * c]} | uint32_t{sc[2 * c + 1]} << 6 | uint32_t{m[2 * c]} << 12 |
                             uint32_t{m[2 * c + 1]} << 18;
          for (size_t i = 0; i < kQ4KEntryBytes; ++i) out[entry + i] = static_cast<uint8_t>(e >> (8 * i));
        } else {
          uint32_t e = 0;
          for (size_t i = 0; i < kQ4KEntryBytes; ++i) e |= uint32_t{in[entry + i]} << (8 * i);
          sc[2 * c] = e & 63;
          sc[2 * c + 1] = (e >> 6) & 63;
          m[2 * c] = (e >> 12) & 63;
          m[2 * c + 1] = (e >> 18) & 63;
        }
        if (five) {
          for (size_t h = 0; h < 2; ++h) {
            const size_t word = 16 * g + 16 * g * h + kWordBytes * lane;  // in the x16 group
            if (to_x16) {
              const uint32_t v = q5_k_lane_bits(in + block + 16, c, h);
              std::memcpy(out + word, &v, kWordBytes);
            } else {
              uint32_t v;
              std::memcpy(&v, in + word, kWordBytes);
              for (uint32_t l = 0; l < 32; ++l) {
                out[block + 16 + l] = static_cast<uint8_t>(out[block + 16 + l] | ((v >> l) & 1u) << (2 * c + h));
              }
            }
          }
        }
        for (size_t k = 0; k < 8; ++k) {
          move(block + quants_at + 32 * c + kWordBytes * k, quants_at * g + (k * lanes + lane) * kWordBytes,
               kWordBytes);
        }
      }
      if (!to_x16) pack_scale_min_k4(sc, m, out + block + 4);
    }
  }
}

// Q2_K and Q3_K (weight_layout.h): groups of kX16SuperBlocks super-blocks,
// lanes = 64-element chunks; the lanes' four sub-block scales in an entry,
// the codes as bit-plane words.

// A super-block's codes as one byte per element: low two bits (lo) and
// Q3_K's third bit (hi), the form both layouts convert through.
struct K23Codes {
  uint8_t lo[kSuperBlockElems], hi[kSuperBlockElems];
};

// GGUF (core/dtype.h): element 128h + 32c + l has its low bits at bits
// 2c..2c+1 of qs[32h + l] and its third bit at bit 4h + c of hmask[l].
void k23_codes_from_gguf(const uint8_t* qs, const uint8_t* hmask, K23Codes& u) {
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * h + 32 * c + l;
        u.lo[e] = static_cast<uint8_t>((qs[32 * h + l] >> (2 * c)) & 3);
        if (hmask != nullptr) u.hi[e] = static_cast<uint8_t>((hmask[l] >> (4 * h + c)) & 1);
      }
    }
  }
}
void k23_codes_to_gguf(const K23Codes& u, uint8_t* qs, uint8_t* hmask) {
  std::memset(qs, 0, 64);
  if (hmask != nullptr) std::memset(hmask, 0, 32);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * h + 32 * c + l;
        qs[32 * h + l] = static_cast<uint8_t>(qs[32 * h + l] | u.lo[e] << (2 * c));
        if (hmask != nullptr) hmask[l] = static_cast<uint8_t>(hmask[l] | u.hi[e] << (4 * h + c));
      }
    }
  }
}

// x16 (weight_layout.h): lane L's low-bit word p has, in bits 2m..2m+1 of
// byte i, chunk element 16p + 4m + i; its third-bit word 4 + h has, in bit m
// of byte i, element 32h + 4m + i. word(j, i) is byte i of lane L's word j
// (chunk c of super-block s).
template <typename Word>
void k23_codes_to_x16(const K23Codes& u, int c, bool third, Word word) {
  const uint8_t* lo = u.lo + 64 * c;
  const uint8_t* hi = u.hi + 64 * c;
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 4; ++i) {
      const int e = 16 * p + i;
      word(p, i) = static_cast<uint8_t>(lo[e] | lo[e + 4] << 2 | lo[e + 8] << 4 | lo[e + 12] << 6);
    }
  }
  if (!third) return;
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      int v = 0;
      for (int m = 0; m < 8; ++m) v |= hi[32 * h + 4 * m + i] << m;
      word(4 + h, i) = static_cast<uint8_t>(v);
    }
  }
}
template <typename Word>
void k23_codes_from_x16(K23Codes& u, int c, bool third, Word word) {
  uint8_t* lo = u.lo + 64 * c;
  uint8_t* hi = u.hi + 64 * c;
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 4; ++i) {
      const int b = word(p, i);
      for (int m = 0; m < 4; ++m) lo[16 * p + 4 * m + i] = static_cast<uint8_t>((b >> (2 * m)) & 3);
    }
  }
  if (!third) return;
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      const int b = word(4 + h, i);
      for (int m = 0; m < 8; ++m) hi[32 * h + 4 * m + i] = static_cast<uint8_t>((b >> m) & 1);
    }
  }
}

void convert_row_k23(DType t, const uint8_t* src, uint8_t* dst, int64_t cols, bool to_x16) {
  const bool two = t == DType::kQ2_K;
  const size_t kBlock = dtype_block_bytes(t);
  const size_t qs_at = two ? offsetof(BlockQ2_K, qs) : offsetof(BlockQ3_K, qs);
  const size_t d_at = two ? offsetof(BlockQ2_K, d) : offsetof(BlockQ3_K, d);
  const size_t scales_at = two ? offsetof(BlockQ2_K, scales) : offsetof(BlockQ3_K, scales);
  const size_t head = static_cast<size_t>(x16_k23_head_bytes(two));
  const int64_t nb = cols / kSuperBlockElems;
  K23Codes u{};
  for (int64_t b0 = 0; b0 < nb; b0 += kX16SuperBlocks) {
    const auto g = static_cast<size_t>(std::min<int64_t>(kX16SuperBlocks, nb - b0));
    const size_t lanes = 4 * g;
    const uint8_t* in = src + static_cast<size_t>(b0) * kBlock;  // the group, both layouts
    uint8_t* out = dst + static_cast<size_t>(b0) * kBlock;
    const uint8_t* x16 = to_x16 ? out : in;  // the group in the x16 layout
    const size_t quants = head * g;          // its first quant word
    // Copies n bytes between a GGUF offset and an x16 offset of the group.
    auto move = [&](size_t gguf, size_t at, size_t n) {
      std::memcpy(out + (to_x16 ? at : gguf), in + (to_x16 ? gguf : at), n);
    };
    for (size_t s = 0; s < g; ++s) {
      const size_t block = s * kBlock;
      const uint8_t* gguf = (to_x16 ? in : out) + block;
      move(block + d_at, 2 * s, 2);
      if (two) move(block + offsetof(BlockQ2_K, dmin), 2 * g + 2 * s, 2);
      if (to_x16) {
        k23_codes_from_gguf(gguf + qs_at, two ? nullptr : gguf + offsetof(BlockQ3_K, hmask), u);
      }
      int sc[16] = {};
      for (size_t c = 0; c < 4; ++c) {
        const size_t lane = 4 * s + c;
        if (two) {
          move(block + scales_at + 4 * c, 4 * g + 4 * lane, 4);  // the 4 bytes sc | m << 4 as they are
        } else if (to_x16) {
          uint32_t e = 0;
          for (int p = 0; p < 4; ++p) {
            e |= static_cast<uint32_t>(q3k_scale(static_cast<int>(4 * c) + p, in + block + scales_at)) << (6 * p);
          }
          for (size_t i = 0; i < 3; ++i) out[2 * g + 3 * lane + i] = static_cast<uint8_t>(e >> (8 * i));
        } else {
          uint32_t e = 0;
          for (size_t i = 0; i < 3; ++i) e |= uint32_t{in[2 * g + 3 * lane + i]} << (8 * i);
          for (int p = 0; p < 4; ++p) sc[4 * c + static_cast<size_t>(p)] = static_cast<int>((e >> (6 * p)) & 63);
        }
        // Byte i of x16 word j of this lane.
        auto at = [&](int j, int i) { return quants + (static_cast<size_t>(j) * lanes + lane) * kWordBytes + i; };
        if (to_x16) {
          k23_codes_to_x16(u, static_cast<int>(c), !two, [&](int j, int i) -> uint8_t& { return out[at(j, i)]; });
        } else {
          k23_codes_from_x16(u, static_cast<int>(c), !two, [&](int j, int i) { return x16[at(j, i)]; });
        }
      }
      if (!to_x16) {
        uint8_t* blk = out + block;
        k23_codes_to_gguf(u, blk + qs_at, two ? nullptr : blk + offsetof(BlockQ3_K, hmask));
        if (!two) {
          // The 6-bit scales back into scales[12] (core/dtype.h, q3k_scale's inverse).
          uint8_t* scales = blk + scales_at;
          std::memset(scales, 0, 12);
          for (int j = 0; j < 16; ++j) {
            scales[j % 8] = static_cast<uint8_t>(scales[j % 8] | (sc[j] & 15) << (j < 8 ? 0 : 4));
            scales[8 + j % 4] = static_cast<uint8_t>(scales[8 + j % 4] | (sc[j] >> 4) << (2 * (j / 4)));
          }
        }
      }
    }
  }
}

void convert_rows(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, bool to_x16) {
  TESSERA_CHECK(has_x16_layout(t));
  TESSERA_CHECK(cols % dtype_block_elems(t) == 0);
  const size_t row_bytes = dtype_row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t off = static_cast<size_t>(r) * row_bytes;
    if (t == DType::kQ4_K || t == DType::kQ5_K) {
      convert_row_q45_k(t, src + off, dst + off, cols, to_x16);
    } else if (t == DType::kQ2_K || t == DType::kQ3_K) {
      convert_row_k23(t, src + off, dst + off, cols, to_x16);
    } else {
      convert_row(t, src + off, dst + off, cols, to_x16);
    }
  }
}

// value(h) is what a source element h becomes (the identity, or f16 -> bf16).
template <typename Value>
void convert_rows_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols, bool to_panel,
                             Value value) {
  TESSERA_CHECK(fits_bf16_panels(rows, cols));
  for (int64_t p0 = 0; p0 < rows; p0 += kBf16PanelRows) {
    const int64_t h = std::min<int64_t>(kBf16PanelRows, rows - p0);  // this panel's rows
    const uint16_t* in = src + p0 * cols;
    uint16_t* out = dst + p0 * cols;
    for (int64_t j = 0; j < h; ++j) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t row_major = j * cols + c;
        const int64_t paired = c / 2 * (2 * h) + 2 * j + c % 2;
        if (to_panel) {
          out[paired] = value(in[row_major]);
        } else {
          out[row_major] = value(in[paired]);
        }
      }
    }
  }
}

}  // namespace

void repack_rows_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols) {
  convert_rows_bf16_panel(src, dst, rows, cols, true, [](uint16_t h) { return h; });
}

void unpack_rows_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols) {
  convert_rows_bf16_panel(src, dst, rows, cols, false, [](uint16_t h) { return h; });
}

void repack_rows_f16_as_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols) {
  convert_rows_bf16_panel(src, dst, rows, cols, true, [](uint16_t h) { return fp32_to_bf16(fp16_to_fp32(h)); });
}

void repack_rows_as_i16_panel(DType t, const uint16_t* src, int16_t* dst, float* scales, int64_t rows, int64_t cols,
                              int panel_rows, const GemmKernels* g) {
  TESSERA_CHECK((t == DType::kF16 || t == DType::kBF16) && fits_i16_panels(rows, cols, panel_rows) &&
                (g == nullptr || g->quantize_i16 != nullptr));
  const bool f16 = t == DType::kF16;
  const auto widen = g == nullptr ? nullptr : f16 ? g->widen_f16 : g->widen_bf16;
  const int64_t groups = cols / kI16GroupCols;
  std::vector<float> wide(static_cast<size_t>(cols));  // one row in f32
  std::vector<int16_t> q(static_cast<size_t>(cols));   // its quants, row-major
  std::vector<float> d(static_cast<size_t>(groups));   // its group scales
  for (int64_t p0 = 0; p0 < rows; p0 += panel_rows) {
    int16_t* out = dst + p0 * cols;    // the panel: [cols / 2][R][2]
    float* ds = scales + p0 * groups;  // [groups][R]
    for (int64_t j = 0; j < panel_rows; ++j) {
      const uint16_t* in = src + (p0 + j) * cols;
      if (widen != nullptr) {
        widen(in, wide.data(), cols);
      } else {
        for (int64_t c = 0; c < cols; ++c)
          wide[static_cast<size_t>(c)] = f16 ? fp16_to_fp32(in[c]) : bf16_to_fp32(in[c]);
      }
      if (g != nullptr) {
        g->quantize_i16(wide.data(), q.data(), d.data(), cols, kI16WeightMax);
      } else {
        for (int64_t gi = 0; gi < groups; ++gi) {
          d[static_cast<size_t>(gi)] =
              quantize_i16_group(wide.data() + gi * kI16GroupCols, q.data() + gi * kI16GroupCols, kI16WeightMax);
        }
      }
      for (int64_t k = 0; k < cols / 2; ++k) {
        std::memcpy(out + k * 2 * panel_rows + 2 * j, q.data() + 2 * k, 2 * sizeof(int16_t));  // column pair k
      }
      for (int64_t gi = 0; gi < groups; ++gi) ds[gi * panel_rows + j] = d[static_cast<size_t>(gi)];
    }
  }
}

bool has_x16_layout(DType t) {
  return t == DType::kQ4_0 || t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ4_1 || t == DType::kQ5_0 ||
         t == DType::kQ5_1 || t == DType::kQ5_K || t == DType::kQ3_K || t == DType::kQ2_K;
}

void repack_rows_x16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  convert_rows(t, src, dst, rows, cols, true);
}

void unpack_rows_x16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  convert_rows(t, src, dst, rows, cols, false);
}

MatrixView prepare_matrix(const Kernels& k, const MatrixView& w, ThreadPool& pool, WeightStorage& storage,
                          bool half_inexact) {
  if (w.layout != WeightLayout::kGguf || w.rows <= 0) return w;
  const size_t row_bytes = dtype_row_bytes(w.dtype, w.cols);
  const size_t bytes = row_bytes * static_cast<size_t>(w.rows);
  const auto* src = static_cast<const uint8_t*>(w.data);
  const bool x16 = k.gemm != nullptr && has_x16_layout(w.dtype) && has_tile(*k.gemm, w.dtype);
  const bool half = w.dtype == DType::kF16 || w.dtype == DType::kBF16;
  const bool from_f16 = half_inexact && w.dtype == DType::kF16;  // values rounded to bf16 or int16
  const bool panels = k.gemm != nullptr && k.gemm->tile_bf16_dp != nullptr && (w.dtype == DType::kBF16 || from_f16) &&
                      !w.f32_activations && fits_bf16_panels(w.rows, w.cols);
  // F16 and (on tables without tile_bf16_dp) BF16 values quantized to int16.
  const bool i16 = !panels && half_inexact && half && k.gemm != nullptr && k.gemm->tile_i16 != nullptr &&
                   !w.f32_activations && fits_i16_panels(w.rows, w.cols, k.gemm->i16_panel_rows);
  const bool is_float = half || w.dtype == DType::kF32;
  if (!x16 && !panels && !i16 && !(is_float && MappedFile::contains(src, bytes))) return w;
  uint8_t* const copy =
      storage.emplace_back(bytes).data();  // (a later emplace_back moves the WeightCopy, not its bytes)
  const int64_t groups = w.cols / kI16GroupCols;
  float* i16_scales = nullptr;  // [rows / R][groups][R]
  if (i16) {
    i16_scales =
        reinterpret_cast<float*>(storage.emplace_back(static_cast<size_t>(w.rows * groups) * sizeof(float)).data());
  }
  // Whole panels per thread (the last bf16 panel may hold fewer rows).
  const int64_t panel_rows = panels ? kBf16PanelRows : i16 ? k.gemm->i16_panel_rows : 1;
  const int64_t units = (w.rows + panel_rows - 1) / panel_rows;
  pool.parallel_for(units, [&](int64_t u0, int64_t u1) {
    const int64_t r0 = u0 * panel_rows;
    const int64_t r1 = std::min(w.rows, u1 * panel_rows);
    const size_t off = static_cast<size_t>(r0) * row_bytes;
    if (x16) {
      repack_rows_x16(w.dtype, src + off, copy + off, r1 - r0, w.cols);
    } else if (i16) {
      repack_rows_as_i16_panel(w.dtype, reinterpret_cast<const uint16_t*>(src + off),
                               reinterpret_cast<int16_t*>(copy + off), i16_scales + r0 * groups, r1 - r0, w.cols,
                               static_cast<int>(panel_rows), k.gemm);
    } else if (panels) {
      const auto* in = reinterpret_cast<const uint16_t*>(src + off);
      auto* out = reinterpret_cast<uint16_t*>(copy + off);
      if (from_f16) {
        repack_rows_f16_as_bf16_panel(in, out, r1 - r0, w.cols);
      } else {
        repack_rows_bf16_panel(in, out, r1 - r0, w.cols);
      }
    } else {
      std::memcpy(copy + off, src + off, static_cast<size_t>(r1 - r0) * row_bytes);
    }
  });
  // The GGUF bytes are not read again through this view: a mapped model
  // file need not stay resident next to the copy.
  MappedFile::release_pages(src, bytes);
  MatrixView out = w;
  out.data = copy;
  out.layout = x16      ? WeightLayout::kX16
               : panels ? WeightLayout::kBf16Panel
               : i16    ? WeightLayout::kI16Panel
                        : WeightLayout::kGguf;
  if (panels) out.dtype = DType::kBF16;  // an F16 matrix's values are bf16 now (same bytes per element)
  out.i16_scales = i16_scales;
  return out;
}

}  // namespace tessera::cpu
