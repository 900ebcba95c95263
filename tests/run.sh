#!/usr/bin/env bash
# Run the test suites: tests/run.sh [all|unit|sanity|lint|integration|molecule]...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --tests
export ANSIBLE_CONFIG=$PWD/ansible.cfg
export PATH=$PWD/.venv/bin:$PATH
export PYTHONPATH=$PWD/.build/collections:$PWD

unit() {
  python -m pytest -q -p no:cacheprovider tests/unit
}

# ansible-test wants the collection at ansible_collections/<ns>/<name> inside a git work tree, and
# downloads a pip bootstrap script, which this offline machine cannot: give it a local one.
sanity() {
  local tree=.build/sanity/ansible_collections/gpufleet/exo
  rm -rf .build/sanity && mkdir -p "$tree"
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree"
  (cd "$tree" && git init -q && git add -A)
  tests/sanity/offline-get-pip.sh
  (cd "$tree" && ansible-test sanity --local --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
      --color no --exclude tests/simulated/libnvidia-ml.c)
}

lint() {
  ansible-lint --profile production --offline
}

integration() {
  python -m pytest -q -p no:cacheprovider tests/integration
}

molecule() {
  echo "molecule: no scenarios yet"
}

suites=("$@")
[ ${#suites[@]} -eq 0 ] || [ "${suites[0]}" = all ] && suites=(unit sanity lint integration molecule)
for suite in "${suites[@]}"; do
  echo "=== $suite"
  "$suite"
done
