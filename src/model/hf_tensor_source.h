// HfTensorSource: a Hugging Face safetensors checkpoint seen through GGUF
// tensor names, so one weight binder serves both formats. Shapes are
// reversed into ggml order (safetensors lists the contiguous dimension last).
#pragma once

#include <string>

#include "formats/safetensors.h"
#include "model/architecture.h"
#include "model/tensor_source.h"

namespace tessera {

class HfTensorSource final : public TensorSource {
 public:
  // Borrows the checkpoint. `arch` selects fused names (Phi-3 gate_up_proj).
  HfTensorSource(const SafetensorsCheckpoint& checkpoint, const ArchitectureInfo& arch, std::string dir)
      : checkpoint_(checkpoint), arch_(arch), dir_(std::move(dir)) {}

  std::optional<TensorRef> find(const std::string& gguf_name) const override;
  const std::string& source_name() const override { return dir_; }

  // The transformers name of a GGUF tensor name ("blk.0.attn_q.weight" ->
  // "model.layers.0.self_attn.q_proj.weight"); empty when there is none.
  static std::string hf_name(const std::string& gguf_name, const ArchitectureInfo& arch);

 private:
  const SafetensorsCheckpoint& checkpoint_;
  const ArchitectureInfo& arch_;
  std::string dir_;
};

}  // namespace tessera
