// The chat template a CLI command uses: the file given, else the model's own.
#pragma once

#include <string>

#include "model/model.h"
#include "tessera/status.h"

namespace tessera::cli {

// The Jinja source of `file` when not empty, else the model's
// tokenizer.chat_template. kNotFound when the file cannot be read or the
// model has none (the message says to pass --chat-template FILE).
Result<std::string> chat_template_source(const std::string& file, const Model& model);

}  // namespace tessera::cli
