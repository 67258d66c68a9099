// ChoiceStream: the text side of one completion — incremental detokenizing
// and stop-string matching streamed together, so no broken UTF-8 and no part
// of a stop string ever leaves the engine.
#pragma once

#include <memory>
#include <string>

#include "sample/stop_matcher.h"
#include "tokenizer/incremental_detokenizer.h"

namespace tessera {

class ChoiceStream {
 public:
  // `tokenizer` may be null (a model without one): then no text is produced.
  ChoiceStream(const Tokenizer* tokenizer, const std::vector<std::string>& stop);

  // Appends a generated token; returns text safe to emit now and whether a
  // stop string ended the choice. `detect_stop` is false before min_tokens.
  StopMatcher::Output push(int32_t token, bool detect_stop);
  // At the end for another reason: the held-back text.
  std::string finish();

 private:
  std::unique_ptr<IncrementalDetokenizer> detok_;
  StopMatcher stop_;
};

}  // namespace tessera
