#include "chat_template_source.h"

#include <fstream>
#include <sstream>

namespace tessera::cli {

Result<std::string> chat_template_source(const std::string& file, const std::string& model_path, const Vocab& vocab) {
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return not_found(file + ": cannot open chat template");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (vocab.chat_template().empty()) {
    return not_found(model_path + " has no chat template; pass one with --chat-template FILE");
  }
  return vocab.chat_template();
}

}  // namespace tessera::cli
