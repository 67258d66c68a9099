#!/usr/bin/env bash
# Installs everything tessera needs to build and test, from Debian 12 packages.
# Does nothing (and asks no mirror) when every package is already installed. Node.js >= 20 with
# npm (for the test clients) comes with the machine; Debian 12's own nodejs is older.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev
  libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev
  libpcre2-dev pkg-config libutf8proc-dev libxxhash-dev libboost-dev curl
  git dpkg-dev   # tessera --version names the commit; cpack -G DEB reads library dependencies with dpkg-shlibdeps
  chromium       # the web UI's browser test (tests/webui), headless
  openmpi-bin libopenmpi-dev  # tensor/pipeline parallelism (mpirun; tests/dist)
  iproute2       # the two-host parallel test's network namespaces (tests/dist/netns_test.sh)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
