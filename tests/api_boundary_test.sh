#!/bin/sh
# The CLI (apps/) and the server (src/server/) include only the public API
# (include/tessera/), their own folders and the web UI's asset table
# (docs/architecture.md "The public API boundary"); no file outside
# src/backend/cpu/ but the registry includes the CPU backend.
# Usage: api_boundary_test.sh SOURCE_DIR
set -eu
cd "$1"
bad=$(grep -rnoE '#include "[^"]+"' src/server apps |
  grep -vE '"(tessera|server|webui)/|"[^/"]+"' || true)  # a name without a folder is the app's own header
if [ -n "$bad" ]; then
  echo "internal headers included by src/server or apps:" >&2
  echo "$bad" >&2
  exit 1
fi
cpu=$(grep -rlE '#include "backend/cpu/' src apps --include=*.h --include=*.cc |
  grep -vE '^src/backend/cpu/|^src/backend/registry\.cc$' || true)
if [ -n "$cpu" ]; then
  echo "files outside src/backend/cpu/ including the CPU backend:" >&2
  echo "$cpu" >&2
  exit 1
fi
echo "api boundary: ok"
