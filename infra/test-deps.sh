#!/usr/bin/env bash
# What `make test` needs from the system, checked before anything else runs:
# Debian's chromium for the status page's browser tests (tests/browser: never a
# browser Playwright downloads; EDGEPROXY_CHROMIUM may name another) and curl for
# the README's examples. Missing ones are installed from the Debian archive when
# this runs as root; otherwise it stops at once with the one command that does it.
set -euo pipefail
chromium=${EDGEPROXY_CHROMIUM:-/usr/bin/chromium}
missing=""
test -x "$chromium" || missing="$missing chromium"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
if test -z "$missing"; then
  exit 0
fi

if test "$(id -u)" -eq 0 && command -v apt-get >/dev/null 2>&1; then
  echo "make test: installing$missing from the Debian archive (apt-get), for the browser tests and the README's examples"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086 # one word per package
  apt-get install -y -q $missing
  if ! test -x "$chromium"; then
    echo "make test: no chromium at $chromium after installing it (EDGEPROXY_CHROMIUM names where to look)" >&2
    exit 1
  fi
  exit 0
fi
echo "make test: the tests need$missing; install with:  sudo apt-get install -y$missing" >&2
exit 1
