#!/usr/bin/env bash
# Run the test suites: tests/run.sh [all|unit|sanity|matrix|lint|integration|site|molecule]...
# It installs what it needs first: the virtualenv and pip packages (scripts/bootstrap.sh), and the
# Debian packages and container images the sanity and molecule suites use.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall time, printed when the script ends, whether the stages passed or not.
stage_times=()
stage_now=""
stage_start=$SECONDS
print_stage_times() {
  local line
  echo "=== stage times"
  printf '%-12s %s\n' stage seconds
  for line in "${stage_times[@]}"; do echo "$line"; done
  # Each scenario's own time, the molecule stage's lanes side by side.
  [ ! -f .build/molecule/times ] || cat .build/molecule/times
  # The stages that ran beside serve (run_beside), each one's own time.
  [ ! -f .build/beside.times ] || cat .build/beside.times
  [ -z "$stage_now" ] || printf '%-12s %d (failed)\n' "$stage_now" $((SECONDS - stage_start))
  [ ! -f .build/containers/ahead.seconds ] \
    || printf '%-12s %s (beside the stages before molecule)\n' images "$(cat .build/containers/ahead.seconds)"
  printf '%-12s %d\n' total "$SECONDS"
  # Last, what failed, each in a line or two: CI keeps only the end of the output, and the logs of
  # the stages that ran beside serve are shown after serve's failure.
  [ ! -s .build/failed.txt ] || { echo "=== what failed"; cat .build/failed.txt; }
}
trap print_stage_times EXIT
# stage_begin NAME, stage_end: what the table says of one stage.
stage_begin() { stage_now=$1; stage_start=$SECONDS; }
stage_end() { stage_times+=("$(printf '%-12s %d' "$stage_now" $((SECONDS - stage_start)))"); stage_now=""; }

stage_begin bootstrap
scripts/bootstrap.sh --tests
stage_end
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

# On both cores, as the integration stage: on one, the second core idled (40 s here against 49 s alone).
run_unit() {
  python -m pytest -q -p no:cacheprovider -n "${GPUFLEET_TEST_WORKERS:-2}" tests/unit
}

# ansible-test wants the collection at ansible_collections/<ns>/<name> inside a git work tree, and
# downloads a pip bootstrap script, which this offline machine cannot: give it a local one. It runs
# the ansible-test of the python on PATH (tests/matrix.sh puts each release's venv first).
run_sanity() {
  apt_install shellcheck
  local top tree
  top=.build/sanity/$(python -c 'from ansible.release import __version__; print(__version__)')
  tree=$top/ansible_collections/gpufleet/exo
  rm -rf "$top" && mkdir -p "$tree"
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
  # The API's proxy is tried for real: nginx as a process of the test's own, a self-signed certificate,
  # and the firewall's table checked by nft (tests/integration/roles/test_node_proxy.py).
  apt_install nginx openssl nft:nftables
  # tinygrad's CPU backend compiles with clang: the tests of exo's tinygrad computing on the CPU
  # (test_tinygrad_backends.py, test_node_plan_backends.py) skip without it. make site installs it
  # later (the node role's exo_node_cpu_packages), so a fresh machine skipped them and a second run did not.
  apt_install clang
  # The collection's alert rules are checked and tested by Prometheus's own promtool (test_alert_rules.py).
  apt_install promtool:prometheus
  # On both cores: most tests wait on child processes (ansible-playbook, sshd, exo). A file's tests stay
  # on one worker, the longest files start first, and files that share something run together
  # (tests/conftest.py, the xdist_group marks).
  python -m pytest -q -p no:cacheprovider -n "${GPUFLEET_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder \
    --durations=40 tests/integration
}

# journals ROLE NAME: the last lines of the journal of the exo instances on each of the scenario's
# containers, which molecule's log does not hold (exo's own account of a request that failed), while
# the containers are still there.
journals() {
  local name
  for name in $(python -c 'import sys, yaml; print(" ".join(p["name"] for p in yaml.safe_load(open(sys.argv[1]))["platforms"]))' \
                  "$1/molecule/$2/molecule.yml"); do
    echo "--- molecule ${1##*/} $2: the journal of exo@* on $name, its last 40 lines"
    podman exec "$name" journalctl --no-pager --output short-monotonic --lines 40 --unit 'exo@*' 2>&1 | cut -c1-300 || true
  done
}

# scenario ROLE NAME: molecule test, its log kept in .build/molecule and its time in the stage table;
# the collection's own deprecation warnings fail it (tests/ansible_log.py). The log is shown where it
# failed: the scenarios run side by side (run_molecule), so their output is not interleaved on screen.
# Its containers are left for run_molecule to destroy.
scenario() {
  local log=$PWD/.build/molecule/${1##*/}-$2.log started=$SECONDS failures
  mkdir -p .build/molecule
  echo "--- molecule ${1##*/} $2: started (${log#"$PWD"/})"
  # A wide terminal: molecule wraps ansible-playbook's lines to it, which would cut each failure into pieces.
  if ! (cd "$1" && COLUMNS=100000 molecule test -s "$2" --destroy never) >"$log" 2>&1; then
    tail -n 200 "$log"
    echo "--- molecule ${1##*/} $2: what failed"
    failures=$(python tests/ansible_log.py failures "$log")
    echo "$failures"
    journals "$1" "$2"
    echo "--- molecule ${1##*/} $2: FAILED after $((SECONDS - started)) s; the whole log: ${log#"$PWD"/}"
    echo "molecule ${1##*/}:$2 after $((SECONDS - started)) s (${log#"$PWD"/}): $(tail -n 1 <<<"$failures")" \
      | cut -c1-1000 >>.build/failed.txt
    return 1
  fi
  python tests/ansible_log.py deprecations "$log" \
    || { echo "--- molecule ${1##*/} $2: FAILED on a deprecation warning" | tee -a .build/failed.txt; return 1; }
  printf '%-12s %d\n' "  ${1##*/}:$2" $((SECONDS - started)) >>.build/molecule/times
  echo "--- molecule ${1##*/} $2: passed in $((SECONDS - started)) s"
}

# The images each scenario runs on: the driver's installs Debian 12's and Debian 13's real packages;
# serve's second host is Debian 13 with CPython 3.12 given as exo_node_python.
declare -A SCENARIO_IMAGES=([driver:default]="debian12 debian13" [node:default]=debian12
                            [node:cluster]=debian12-exo [node:serve]=debian13-exo)
# The scenarios in two lanes side by side: most of their time is spent waiting on systemd, apt and
# exo's ring, and one after the other they left the two cores idle about half the time. Then serve
# alone: it loads a 2.5 GB model per host and times its checks against exo's own work (an instance
# killed mid-answer), which under the other lanes' load took 5 times as long and missed its moment.
LANES=("driver:default node:default" "node:cluster")
ALONE=(node:serve)
read -ra SCENARIOS <<<"${LANES[*]} ${ALONE[*]}"

# images ROLE:NAME...: build the images of these scenarios where they are missing or outdated
# (image.sh locks each image, so a second caller waits for a build under way, then finds it).
images() {
  local spec image
  for spec in "$@"; do
    for image in ${SCENARIO_IMAGES[$spec]}; do tests/containers/image.sh "$image" >/dev/null; done
  done
}

# Every scenario's images in the molecule stage's order, for the stages before it to run beside.
images_ahead() {
  local started=$SECONDS
  # shellcheck source=tests/containers/env.sh
  . tests/containers/env.sh
  images "${SCENARIOS[@]}"
  echo "$((SECONDS - started))" >.build/containers/ahead.seconds
}

# lane ROLE:NAME...: each scenario in turn, after its images (built already where images_ahead ran
# beside the stages before this one).
lane() {
  local spec
  for spec in "$@"; do
    images "$spec"
    scenario "roles/${spec%%:*}" "${spec#*:}" || return 1
  done
}

# destroy ROLE:NAME...: the scenarios' containers, once no scenario runs: podman removing one
# scenario's containers while another's ran broke the cgroups of those (cgroup v1: their next exec
# failed, and a ring dropped the request it was answering).
destroy() {
  local spec failed=0
  for spec in "$@"; do
    (cd "roles/${spec%%:*}" && molecule destroy -s "${spec#*:}") >>".build/molecule/${spec%%:*}-${spec#*:}.log" 2>&1 \
      || { echo "--- molecule ${spec%%:*} ${spec#*:}: its containers were not destroyed (podman ps -a)"; failed=1; }
  done
  return "$failed"
}

# run_beside: the stages of $beside one after the other, in this shell's errexit (run in a background
# subshell: a stage called in a condition would not stop at its first failure). Each one's time goes
# to the stage table.
run_beside() {
  local suite started
  for suite in "${beside[@]}"; do
    echo "=== $suite (beside serve)"
    started=$SECONDS
    "run_$suite"
    printf '%-12s %d (beside serve)\n' "$suite" $((SECONDS - started)) >>.build/beside.times
  done
}

run_molecule() {
  local spec pids=() failed=0 pid scenarios beside_pid=""
  tests/containers/setup.sh
  # shellcheck source=tests/containers/env.sh
  . tests/containers/env.sh
  for spec in "${LANES[@]}"; do
    # shellcheck disable=SC2086 # a lane is its words
    lane $spec &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  read -ra scenarios <<<"${LANES[*]}"
  destroy "${scenarios[@]}" || failed=1
  if [ "$failed" -ne 0 ]; then
    [ ${#beside[@]} -eq 0 ] || echo "=== not run, the scenarios before serve having failed: ${beside[*]}"
    return 1
  fi
  if [ ${#beside[@]} -gt 0 ]; then
    echo "=== ${beside[*]}: beside serve (.build/beside.log, shown when they end)"
    # At the lowest priority: they take what serve leaves idle, and serve's controller (its clients,
    # the loops that catch a moment of exo's work) is not kept waiting behind them.
    (set -e; renice -n 19 -p "$BASHPID" >/dev/null; run_beside) >.build/beside.log 2>&1 &
    beside_pid=$!
  fi
  lane "${ALONE[@]}" || failed=1
  destroy "${ALONE[@]}" || failed=1
  if [ -n "$beside_pid" ]; then
    if wait "$beside_pid"; then
      cat .build/beside.log
    else
      tail -n 300 .build/beside.log
      echo "=== FAILED beside serve: $(grep '^=== ' .build/beside.log | tail -n 1 | cut -c5-) (the whole log: .build/beside.log)" \
        | tee -a .build/failed.txt
      failed=1
    fi
  fi
  return "$failed"
}

# The ansible-core releases the collection claims (meta/runtime.yml, the roles' min_ansible_version):
# every release still supported, oldest first, with the month its support ends (ansible-core's
# release and maintenance schedule; docs/layout.md, "The ansible-core matrix").
RELEASES=(2.19:2027-05 2.20:2027-11 2.21:2028-05)
# The oldest Python of the managed hosts the roles claim (EL 9's); the newest is this venv's own.
OLDEST_HOST_PYTHON=3.9

# release_venv RELEASE: a venv with that ansible-core, the controller's and managed hosts' packages
# and the test suites' (.build/matrix/RELEASE, made once per set of requirements), or .venv where it
# already holds that release. Made with .venv's own interpreter, the Python the bootstrap chose.
release_venv() {
  local release=$1 venv=.build/matrix/$1 marker
  if [ "$(.venv/bin/python -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')" = "$release" ]; then
    echo .venv
    return 0
  fi
  marker=$venv/.installed-$(cat requirements.txt requirements-hosts.txt tests/requirements.txt | sha256sum | cut -c1-16)
  mkdir -p .build/matrix
  # One maker at a time: venvs_ahead may be making it already, and a second would remove its work.
  (
    flock 9
    if [ ! -e "$marker" ]; then
      rm -rf "$venv"
      .venv/bin/python -m venv "$venv"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ansible-core==$release.*" \
        -r requirements.txt -r requirements-hosts.txt -r tests/requirements.txt >&2
      touch "$marker"
    fi
  ) 9>"$venv.lock"
  echo "$venv"
}

# The releases' virtualenvs, made beside the stages before the matrix's: pip mostly waits on the
# network and the disk. A failure here only shows in its log: run_matrix makes what is missing itself.
venvs_ahead() {
  local entry
  for entry in "${RELEASES[@]}"; do release_venv "${entry%%:*}" >/dev/null || true; done
}

host_python() {
  local python
  for python in "$(command -v "python$1" 2>/dev/null || true)" "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$1".*/bin/python"$1"; do
    if [ -x "$python" ] && "$python" -c 'import sys' 2>/dev/null; then echo "$python"; return 0; fi
  done
  echo "matrix: no Python $1 on this machine for the oldest managed hosts' Python; install it (pyenv install $1)" >&2
  return 1
}

# The main job's probe play on this machine, as make facts runs it, with the managed host's modules
# on the given Python: the play must end with no failure.
facts_play() {
  local release=$1 python=$2 log
  log=.build/matrix/facts-$release-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])').log
  ansible-playbook playbooks/facts.yml -e "ansible_python_interpreter=$python" \
    -e "fleet_report_dir=$PWD/.build/matrix/reports-$release" >"$log" 2>&1 \
    || { tail -n 40 "$log" >&2; echo "matrix: ansible-core $release: playbooks/facts.yml failed on $python ($log)" >&2; return 1; }
  grep -Eq 'localhost +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0 ' "$log" \
    || { echo "matrix: ansible-core $release: playbooks/facts.yml did not end cleanly on $python ($log)" >&2; return 1; }
}

# planned SUITE: whether this call runs that suite, in its turn or beside serve.
planned() { [[ " ${suites[*]} ${beside[*]} " == *" $1 "* ]]; }

# Per release: the unit tests and the playbooks' syntax; on the oldest and the newest, ansible-test
# sanity and the probe play with the managed hosts' oldest and newest Python. The release .venv holds
# is left to the unit and sanity suites when they run in the same call. The virtualenvs are made all
# at once, and the oldest release's sanity (the longest step, mostly one process) runs beside the
# other releases' steps, its output shown when it ends.
run_matrix() {
  local entry release venv oldest newest old_path=$PATH pids=() started sanity_pid="" sanity_log
  oldest=${RELEASES[0]%%:*}
  newest=${RELEASES[${#RELEASES[@]}-1]%%:*}
  mkdir -p .build/matrix
  # The releases' virtualenvs all at once, before the first is used: pip spends much of its time
  # unpacking and waiting on the disk, and a fresh machine makes three of them.
  started=$SECONDS
  for entry in "${RELEASES[@]}"; do
    release_venv "${entry%%:*}" >/dev/null 2>".build/matrix/venv-${entry%%:*}.log" &
    pids+=($!)
  done
  for entry in "${RELEASES[@]}"; do
    wait "${pids[0]}" || { cat ".build/matrix/venv-${entry%%:*}.log" >&2; echo "matrix: the venv of ansible-core ${entry%%:*} failed" >&2; return 1; }
    pids=("${pids[@]:1}")
  done
  echo "--- the releases' virtualenvs: $((SECONDS - started)) s"
  for entry in "${RELEASES[@]}"; do
    release=${entry%%:*}
    started=$SECONDS
    echo "--- ansible-core $release (supported until ${entry#*:})"
    venv=$(release_venv "$release")
    export PATH=$PWD/$venv/bin:$old_path
    ansible --version | sed -n 1p
    # ansible-test's rules only grow from release to release: the oldest and the newest bound them.
    if [ "$release" = "$oldest" ] && [ "$venv" != .venv ]; then
      sanity_log=.build/matrix/sanity-$release.log
      run_sanity >"$sanity_log" 2>&1 &
      sanity_pid=$!
    elif { [ "$release" = "$oldest" ] || [ "$release" = "$newest" ]; } \
        && { [ "$venv" != .venv ] || ! planned sanity; }; then
      run_sanity
    fi
    if [ "$venv" != .venv ] || ! planned unit; then run_unit; fi
    ansible-playbook --syntax-check site.yml playbooks/facts.yml >/dev/null
    if [ "$release" = "$oldest" ] || [ "$release" = "$newest" ]; then
      facts_play "$release" "$PWD/$venv/bin/python"
      facts_play "$release" "$(host_python "$OLDEST_HOST_PYTHON")"
    fi
    echo "--- ansible-core $release: $((SECONDS - started)) s"
  done
  export PATH=$old_path
  if [ -n "$sanity_pid" ]; then
    started=$SECONDS
    wait "$sanity_pid" || { cat "$sanity_log"; echo "matrix: ansible-test sanity failed on ansible-core $oldest ($sanity_log)" >&2; return 1; }
    echo "--- ansible-test sanity on ansible-core $oldest: $(grep -c '^Running sanity test' "$sanity_log") tests passed" \
      "(waited for it $((SECONDS - started)) s; $sanity_log)"
  fi
}

# The README's main command, twice: the second run must change nothing, and the exo the role reports
# installed is the one make site said it would install (real exo where its sources can be reached).
run_site() {
  make site 2>&1 | tee .build/site-first-run.log
  make site 2>&1 | tee .build/site-second-run.log
  python tests/ansible_log.py deprecations .build/site-first-run.log .build/site-second-run.log
  grep -Eq 'localhost +: ok=[0-9]+ +changed=0 ' .build/site-second-run.log \
    || { echo "make site: the second run changed something" >&2; exit 1; }
  if grep -q '^make site: real exo' .build/site-second-run.log; then
    grep -q '"  exo from exo 0.0.1 in ' .build/site-second-run.log \
      || { echo "make site: said real exo, the role reports another" >&2; exit 1; }
  else
    grep -q 'the stand-in of tests/standin' .build/site-second-run.log \
      || { echo "make site: said the stand-in, the role reports another" >&2; exit 1; }
  fi
}

suites=("$@")
if [ ${#suites[@]} -eq 0 ] || [ "${suites[0]}" = all ]; then
  suites=(unit sanity matrix lint integration site molecule)
fi
# With the molecule stage, these stages run beside its last scenario, serve (run_beside): serve's ring
# computes on one core at a time and left the other idle for its eight minutes, and each of these is
# mostly one process too (ansible-test's pylint, ansible-lint) or waits on apt and pip (the main job,
# which changes this machine, not the scenario's containers). They keep their order.
BESIDE_SERVE=(sanity matrix lint site)
beside=()
if planned molecule; then
  kept=()
  for suite in "${suites[@]}"; do
    if [[ " ${BESIDE_SERVE[*]} " == *" $suite "* ]]; then beside+=("$suite"); else kept+=("$suite"); fi
  done
  suites=("${kept[@]}")
fi
# The molecule stage's images are minutes of debootstrap, mostly waiting on the mirror and the disk:
# when stages run before molecule, they are built beside them. podman and debootstrap are installed
# first, in the foreground, while nothing else uses apt (debootstrap's dpkg is the image's own).
# A failed build here only shows in its log: the molecule stage builds what is missing itself.
rm -f .build/containers/ahead.seconds .build/molecule/times .build/beside.times .build/failed.txt
if planned matrix; then
  mkdir -p .build/matrix
  venvs_ahead >.build/matrix/ahead.log 2>&1 &
fi
if planned molecule && [ "${suites[0]}" != molecule ]; then
  echo "=== podman"
  stage_begin podman
  tests/containers/setup.sh
  stage_end
  mkdir -p .build/containers
  images_ahead >.build/containers/ahead.log 2>&1 &
  echo "=== the molecule stage's images are built beside the stages before it (.build/containers/ahead.log)"
fi
for suite in "${suites[@]}"; do
  echo "=== $suite"
  stage_begin "$suite"
  "run_$suite"
  stage_end
done
