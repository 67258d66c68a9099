#!/usr/bin/env bash
# One command from a fresh clone to a built, testable tree (README "Quick start"): the Debian
# packages, the npm test clients (before configuring: ctest registers their tests only when
# node_modules exists), then the release build. Idempotent: a second run installs nothing new
# and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for dir in tests/server/node tests/webui; do
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
done
cmake --preset release
cmake --build --preset release
echo "setup: built build/release/bin/tessera; test with: ctest --preset release"
