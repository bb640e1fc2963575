#!/usr/bin/env bash
# What `make bench-compare` needs from the system: wrk (the load generator of the JSON
# workloads) and redis-server (LiteLLM's shared-state contender). Missing ones are installed
# from the Debian archive when this runs as root; otherwise it stops at once with the one
# command that does it.
set -euo pipefail
missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
if test -z "$missing"; then
  exit 0
fi
if test "$(id -u)" -eq 0 && command -v apt-get >/dev/null 2>&1; then
  echo "make bench-compare: installing$missing from the Debian archive (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086 # one word per package
  apt-get install -y -q $missing
  exit 0
fi
echo "make bench-compare: the benchmark needs$missing; install with:  sudo apt-get install -y$missing" >&2
exit 1
