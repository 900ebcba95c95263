#!/usr/bin/env bash
# Create .venv with a controller Python that ansible-core supports, install the requirements, and
# make the collection findable as gpufleet.exo. Safe to run again: it only does what is missing.
#   scripts/bootstrap.sh            runtime requirements (to run the playbooks)
#   scripts/bootstrap.sh --tests    also the test requirements
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=false
[ "${1:-}" = "--tests" ] && want_tests=true

find_python() {
  # ansible-core 2.21 needs a 3.12+ controller; pyenv shims can be broken, so try real binaries first.
  local candidates=()
  for minor in 13 12; do
    candidates+=("$(command -v "python3.$minor" 2>/dev/null || true)")
    if command -v pyenv >/dev/null 2>&1; then
      candidates+=("$(pyenv root)"/versions/3."$minor".*/bin/python3."$minor")
    fi
  done
  candidates+=("$(command -v python3 2>/dev/null || true)")
  for python in "${candidates[@]}"; do
    if [ -z "$python" ] || [ ! -x "$python" ]; then continue; fi
    if "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$python"
      return 0
    fi
  done
  echo "bootstrap: no Python 3.11 or newer found; install python3 (>= 3.12 preferred)" >&2
  return 1
}

if [ ! -x .venv/bin/python ]; then
  python=$(find_python)
  echo "bootstrap: creating .venv with $python"
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi

# install_once NAME ARG...: pip-install the requirements files and requirement strings given, unless
# the same set was installed before (a marker in .venv named after their hash).
install_once() {
  local name=$1; shift
  local marker arg args=()
  for arg in "$@"; do
    if [ -f "$arg" ]; then args+=(-r "$arg"); else args+=("$arg"); fi
  done
  marker=".venv/.installed-$name-$( { printf '%s\n' "$@"; for arg in "$@"; do if [ -f "$arg" ]; then cat "$arg"; fi; done; } \
    | sha256sum | cut -c1-16)"
  [ -e "$marker" ] && return 0
  echo "bootstrap: installing $*"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${args[@]}"
  rm -f .venv/.installed-"$name"-*
  touch "$marker"
}
# ansible-core is the controller's, not the collection's: its requirements leave it out, and the
# release comes from what meta/runtime.yml claims (pip takes the newest that this Python runs).
# The local inventory manages this machine with the venv's own Python, so the probe's libraries for
# managed hosts go in too.
core="ansible-core$(sed -n 's/^requires_ansible: *"\(.*\)"$/\1/p' meta/runtime.yml)"
install_once runtime "$core" requirements.txt requirements-hosts.txt
$want_tests && install_once tests "$core" requirements.txt requirements-hosts.txt tests/requirements.txt \
  tests/tools-requirements.txt tests/containers/requirements.txt

mkdir -p .build/collections/ansible_collections/gpufleet
ln -sfn ../../../.. .build/collections/ansible_collections/gpufleet/exo
