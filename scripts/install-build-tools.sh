#!/bin/sh
# Installs what node-gyp needs to build the LMDB binding on `npm ci` (scripts/build-lmdb.mjs):
# python3, make and a C++ compiler, from Debian's packages when one is missing. Safe to run
# again: does nothing when all three are there.
set -eu

missing=""
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"
if [ -z "$missing" ]; then
  echo "build tools present: $(python3 --version 2>&1), $(make --version | head -n1), $(g++ --version | head -n1)"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-build-tools: need root (or sudo) to install$missing with apt-get" >&2
  exit 1
fi

$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends$missing
echo "build tools installed:$missing"
