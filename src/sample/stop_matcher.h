// StopMatcher: finds stop strings in streamed text. Text that might be the
// start of a stop string is held back until it is known not to be; when a stop
// string appears, the text before it is released and the rest discarded, so
// the output never contains a stop string. Works on bytes of valid UTF-8
// (stop strings may span tokens or end inside one); held-back text always
// starts at a character boundary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/generation_options.h"  // kMaxStopStrings

namespace tessera {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Output {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string was found; generation ends
  };

  // Appends `text`. With `detect` false (before min_tokens) nothing is held
  // back or matched and the text passes through.
  Output push(std::string_view text, bool detect = true);
  // Releases held-back text (generation ended for another reason).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace tessera
