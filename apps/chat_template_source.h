// The chat template a CLI command uses: the file given, else the model's own.
#pragma once

#include <string>

#include "tessera/status.h"
#include "tessera/vocab.h"

namespace tessera::cli {

// The Jinja source of `file` when not empty, else the chat template of
// `vocab` (the model at `model_path`). kNotFound when the file cannot be read
// or the model has none (the message says to pass --chat-template FILE).
Result<std::string> chat_template_source(const std::string& file, const std::string& model_path, const Vocab& vocab);

}  // namespace tessera::cli
