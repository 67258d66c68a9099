// The backend registry: the backends this build has, by name, for --device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tessera/backend_options.h"
#include "tessera/status.h"

namespace tessera {

// Names of the backends compiled into this build, default first ("cpu").
std::vector<std::string> backend_names();

// Creates the backend options.device names. Errors (kInvalidArgument): an
// unknown device (the message lists backend_names()), or options it cannot
// honour (an ISA this CPU lacks, threads < 1, decode_streams outside 1..4).
Result<std::unique_ptr<Backend>> create_backend(const BackendOptions& options);

}  // namespace tessera
