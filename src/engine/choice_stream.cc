#include "engine/choice_stream.h"

namespace tessera {

ChoiceStream::ChoiceStream(const Tokenizer* tokenizer, const std::vector<std::string>& stop) : stop_(stop) {
  if (tokenizer != nullptr) detok_ = std::make_unique<IncrementalDetokenizer>(*tokenizer);
}

StopMatcher::Output ChoiceStream::push(int32_t token, bool detect_stop) {
  if (!detok_) return {};
  return stop_.push(detok_->push(token), detect_stop);
}

std::string ChoiceStream::finish() {
  if (!detok_) return {};
  // The detokenizer's tail can still complete a stop string.
  StopMatcher::Output out = stop_.push(detok_->flush(), true);
  if (!out.stopped) out.text += stop_.flush();
  return out.text;
}

}  // namespace tessera
