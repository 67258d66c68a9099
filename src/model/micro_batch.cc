#include "model/micro_batch.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace tessera {

namespace {

// Measured with `mpirun -np 2 tessera bench --pipeline-parallel-size 2 -p 256`
// (docs/parallelism.md).
constexpr int32_t kDefaultMinRows = 32;
constexpr int kMaxMicroBatchesPerStage = 4;
constexpr long kMaxMinRows = 1 << 20;

// The variable's value; -1 when it is not an integer in [0, kMaxMinRows].
long env_min_rows() {
  const char* v = std::getenv("TESSERA_PP_MICRO_BATCH_ROWS");
  if (v == nullptr || *v == '\0') return kDefaultMinRows;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < 0 || n > kMaxMinRows) return -1;
  return n;
}

}  // namespace

int32_t micro_batch_min_rows() {
  static const int32_t rows = [] {
    const long n = env_min_rows();
    return static_cast<int32_t>(n < 0 ? kDefaultMinRows : n);
  }();
  return rows;
}

Status check_micro_batch_env() {
  if (env_min_rows() >= 0) return {};
  return invalid_argument(std::string("TESSERA_PP_MICRO_BATCH_ROWS=") + std::getenv("TESSERA_PP_MICRO_BATCH_ROWS") +
                          ": expected an integer from 0 to " + std::to_string(kMaxMinRows));
}

std::vector<std::pair<int32_t, int32_t>> micro_batch_ranges(int32_t n_tokens, int pp_size, int32_t min_rows) {
  int32_t m = 1;
  if (pp_size > 1 && min_rows > 0) {
    m = std::clamp(n_tokens / min_rows, int32_t{1}, static_cast<int32_t>(kMaxMicroBatchesPerStage * pp_size));
  }
  std::vector<std::pair<int32_t, int32_t>> ranges;
  ranges.reserve(static_cast<size_t>(m));
  const int32_t base = n_tokens / m, extra = n_tokens % m;
  int32_t begin = 0;
  for (int32_t i = 0; i < m; ++i) {
    const int32_t end = begin + base + (i < extra ? 1 : 0);
    ranges.emplace_back(begin, end);
    begin = end;
  }
  return ranges;
}

ForwardBatch slice_batch(const ForwardBatch& b, int32_t begin, int32_t end) {
  ForwardBatch s;
  s.token_ids.assign(b.token_ids.begin() + begin, b.token_ids.begin() + end);
  s.positions.assign(b.positions.begin() + begin, b.positions.begin() + end);
  s.slot_mapping.assign(b.slot_mapping.begin() + begin, b.slot_mapping.begin() + end);
  for (const AttentionSeq& q : b.seqs) {
    const int32_t lo = std::max(begin, q.token_begin), hi = std::min(end, q.token_begin + q.n_tokens);
    if (lo < hi) s.seqs.push_back({lo - begin, hi - lo, q.block_table});
  }
  for (const int32_t row : b.logits_rows) {
    if (row >= begin && row < end) s.logits_rows.push_back(row - begin);
  }
  return s;
}

}  // namespace tessera
