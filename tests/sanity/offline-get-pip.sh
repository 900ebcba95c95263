#!/usr/bin/env bash
# ansible-test bootstraps pip in its sanity virtualenvs with a script it downloads from
# ci-files.testing.ansible.com, which this network does not reach. Put a stand-in in its cache
# that does the same with ensurepip and PyPI.
set -euo pipefail
source_file=$(python -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py"))')
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',/\1/p" "$source_file" | head -n 1)
[ -n "$pip_version" ] || { echo "offline-get-pip: cannot find ansible-test's pip version in $source_file" >&2; exit 1; }
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
[ -e "$cache" ] && exit 0
mkdir -p "$(dirname "$cache")"
cat > "$cache" <<'PY'
# Offline stand-in for get-pip.py: ensurepip, then pip installs what it was asked to.
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
PY
echo "offline-get-pip: wrote $cache for pip $pip_version"
