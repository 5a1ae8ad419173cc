#!/bin/sh
# Installs Debian's chromium for the browser tests when it is missing. Safe to run again:
# does nothing when /usr/bin/chromium is already there.
set -eu

if [ -x /usr/bin/chromium ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-chromium: need root (or sudo) to install chromium with apt-get" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core

if [ ! -x /usr/bin/chromium ]; then
  echo "install-chromium: apt-get finished but /usr/bin/chromium is missing" >&2
  exit 1
fi
echo "chromium installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
