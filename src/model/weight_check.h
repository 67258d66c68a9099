// Non-finite values in a loaded model's weights (issue #17): a model whose
// file holds an Inf or NaN would produce NaN logits silently. The cheap
// check — run at every load — reads every block's f16 scale fields of the
// quantized matrices (one 2-byte field per 18..210 bytes) and every value
// of the f32 norms and biases; `every_value` (`--check-tensors` on run,
// serve, bench and chat) also dequantizes every row of every matrix and
// tests each value.
#pragma once

#include <string>

#include "model/model_weights.h"
#include "tessera/status.h"

namespace tessera {

// kInvalidArgument naming `file`, the tensor (its GGUF name), the row and the
// block or column of the first non-finite value found, e.g.
//   "m.gguf: tensor 'blk.0.attn_q.weight' row 3 block 1: scale d is +Inf".
Status check_weights(const ModelWeights& weights, bool every_value, const std::string& file);

}  // namespace tessera
