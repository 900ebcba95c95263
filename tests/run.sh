#!/usr/bin/env bash
# Run the test suites: tests/run.sh [all|unit|sanity|lint|integration|site|molecule]...
# It installs what it needs first: the virtualenv and pip packages (scripts/bootstrap.sh), and the
# Debian packages and container images the sanity and molecule suites use.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --tests
export ANSIBLE_CONFIG=$PWD/ansible.cfg
export PATH=$PWD/.venv/bin:$PATH
export PYTHONPATH=$PWD/.build/collections:$PWD

# apt_install PROGRAM[:PACKAGE]...: install the package of each program that is not on PATH.
apt_install() {
  local missing=() spec
  for spec in "$@"; do command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

run_unit() {
  python -m pytest -q -p no:cacheprovider tests/unit
}

# ansible-test wants the collection at ansible_collections/<ns>/<name> inside a git work tree, and
# downloads a pip bootstrap script, which this offline machine cannot: give it a local one.
run_sanity() {
  apt_install shellcheck
  local tree=.build/sanity/ansible_collections/gpufleet/exo
  rm -rf .build/sanity && mkdir -p "$tree"
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree"
  (cd "$tree" && git init -q && git add -A)
  tests/sanity/offline-get-pip.sh
  (cd "$tree" && ansible-test sanity --local --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
      --color no)
}

run_lint() {
  ansible-lint
}

run_integration() {
  # The fleet lab (tests/integration/fleet): network namespaces and an sshd per simulated host.
  apt_install ip:iproute2 sshd:openssh-server
  # The fleet report's test opens the page in a real headless browser.
  apt_install chromium
  python -m pytest -q -p no:cacheprovider tests/integration
}

run_molecule() {
  tests/containers/setup.sh
  # shellcheck source=tests/containers/env.sh
  . tests/containers/env.sh
  tests/containers/image.sh debian12
  (cd roles/driver && molecule test)
  (cd roles/node && molecule test)
  tests/containers/image.sh debian12-exo && (cd roles/node && molecule test -s cluster)
  # Real inference: the serve scenario loads a 2.5 GB model per host, after cluster is gone.
  (cd roles/node && molecule test -s serve)
}

# The README's main command, twice: the second run must change nothing.
run_site() {
  ansible-playbook site.yml
  ansible-playbook site.yml | tee .build/site-second-run.log
  grep -Eq 'localhost +: ok=[0-9]+ +changed=0 ' .build/site-second-run.log \
    || { echo "site.yml: the second run changed something" >&2; exit 1; }
}

suites=("$@")
if [ ${#suites[@]} -eq 0 ] || [ "${suites[0]}" = all ]; then
  suites=(unit sanity lint integration site molecule)
fi
for suite in "${suites[@]}"; do
  echo "=== $suite"
  "run_$suite"
done
