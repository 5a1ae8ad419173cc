#!/bin/sh
# Installs, from Debian's packages, what the project needs beyond Node.js and npm, when missing:
# - python3, make and g++: node-gyp builds the LMDB binding on `npm ci` (scripts/build-lmdb.mjs);
# - chromium (with a font): the usage page's browser tests (test/helpers/browser.ts);
# - redis-server (and redis-cli): the Redis backend's tests start their own (test/helpers/redis.ts).
# Safe to run again: when everything is there it only checks (a few `command -v`) and exits.
# `npm test` runs it first (pretest, with --for-tests: one line, or nothing, when all is present).
set -eu

quiet=""
[ "${1:-}" = "--for-tests" ] && quiet=1

packages=""
command -v python3 >/dev/null 2>&1 || packages="$packages python3"
command -v make >/dev/null 2>&1 || packages="$packages make"
command -v g++ >/dev/null 2>&1 || packages="$packages g++"
[ -x /usr/bin/chromium ] || packages="$packages chromium fonts-dejavu-core"
{ command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; } || packages="$packages redis-server"

if [ -z "$packages" ]; then
  [ -n "$quiet" ] || echo "system packages present: $(python3 --version 2>&1), $(make --version | head -n1), $(g++ --version | head -n1), $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium), $(redis-server --version | cut -d" " -f1-3)"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "install-system-packages: missing$packages and no root to install them; run as root: sudo sh scripts/install-system-packages.sh" >&2
  exit 1
fi

$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends$packages

for tool in python3 make g++ /usr/bin/chromium redis-server redis-cli; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-system-packages: apt-get finished but $tool is missing" >&2
    exit 1
  fi
done
echo "system packages installed:$packages"
