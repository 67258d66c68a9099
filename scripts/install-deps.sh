#!/usr/bin/env bash
# Installs everything tessera needs to build and test, from Debian 12 packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ clang libclang-rt-14-dev \
  libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev \
  libpcre2-dev pkg-config libutf8proc-dev libxxhash-dev libboost-dev curl
