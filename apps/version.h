// `tessera --version`: what this binary is and what it can run on.
#pragma once

#include <string>

namespace tessera::cli {

// Version, git commit, build type and compiler, backends, and the CPU kernel
// paths compiled in against those this CPU can run (several lines, no trailing newline).
std::string version_text();

}  // namespace tessera::cli
