#!/usr/bin/env bash
# Installs the .deb that `cpack -G DEB` made into a clean Debian 12 root and runs it there:
# `tessera --version` and the stories260K greedy golden. Needs root, debootstrap and the Debian
# mirror (the library dependencies come from it); takes a few minutes, so it is not in .ci/run.
#   scripts/deb-clean-root-test.sh DEB STORIES_GGUF [ROOT]
# ROOT: a directory made by an earlier run (`debootstrap --variant=minbase bookworm ROOT`) to reuse;
# without it a fresh root is bootstrapped in a temporary directory and removed at the end.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 DEB STORIES_GGUF [ROOT]" >&2
  exit 2
fi
DEB=$(realpath "$1")
MODEL=$(realpath "$2")
ROOT=${3:-}
command -v debootstrap >/dev/null || { echo "debootstrap not found: apt-get install debootstrap" >&2; exit 1; }
CLEANUP_ROOT=""
if [ -z "$ROOT" ]; then
  ROOT=$(mktemp -d)
  CLEANUP_ROOT=$ROOT
fi
cleanup() {
  umount "$ROOT/proc" 2>/dev/null || true
  if [ -n "$CLEANUP_ROOT" ]; then rm -rf "$CLEANUP_ROOT"; fi
}
trap cleanup EXIT
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  debootstrap --variant=minbase bookworm "$ROOT" http://deb.debian.org/debian
fi
cp "$DEB" "$ROOT/tmp/tessera.deb"
cp "$MODEL" "$ROOT/tmp/stories260K.gguf"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mount -t proc proc "$ROOT/proc"
# dpkg -i stops at the missing libraries; apt-get -f install brings them from the mirror.
chroot "$ROOT" dpkg -i /tmp/tessera.deb || true
chroot "$ROOT" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq' >/dev/null
chroot "$ROOT" dpkg -s tessera | grep -q "^Status: install ok installed"
chroot "$ROOT" tessera --version | grep "^tessera 0\."
ids=$(chroot "$ROOT" tessera run -m /tmp/stories260K.gguf --prompt-ids 1,403,407,261,378 -n 8 --temp 0 --print-ids -t 1 2>/dev/null)
if [ "$ids" != "432,383,286,261,376,298,315,421" ]; then
  echo "FAIL: greedy tokens in the clean root: $ids" >&2
  exit 1
fi
echo "ok: the .deb installs on a clean Debian $(cat "$ROOT/etc/debian_version") root and runs the stories260K golden"
