#include "sample/stop_matcher.h"

#include <algorithm>

namespace tessera {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

StopMatcher::Output StopMatcher::push(std::string_view text, bool detect) {
  Output out;
  held_.append(text);
  if (!detect || stops_.empty()) {
    out.text.swap(held_);
    return out;
  }
  // The earliest stop string wins; at one position the shortest.
  size_t best = std::string::npos;
  for (const auto& s : stops_) best = std::min(best, held_.find(s));
  if (best != std::string::npos) {
    out.text = held_.substr(0, best);
    out.stopped = true;
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of a stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > hold; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tessera
