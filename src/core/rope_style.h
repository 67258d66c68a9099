// Rotary position embedding conventions (RoFormer, Su et al. 2021,
// arXiv:2104.09864): which elements of a head are rotated together. Part of
// an architecture's metadata; every backend's RoPE op takes it.
#pragma once

namespace tessera {

// kNorm rotates adjacent pairs (x[2i], x[2i+1]) as GGUF Llama files store Q/K;
// kNeox rotates (x[i], x[i + n_rot/2]) as Hugging Face / GPT-NeoX checkpoints do.
enum class RopeStyle { kNorm, kNeox };

}  // namespace tessera
