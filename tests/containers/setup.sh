#!/usr/bin/env bash
# Prepare this machine for the container tests: the Debian packages podman and debootstrap need,
# and the private containers.conf (see env.sh). Safe to run again: it installs only what is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/containers/env.sh
. "${here}/env.sh"

packages=(podman runc debootstrap uidmap slirp4netns fuse-overlayfs)

missing=()
for pkg in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null || true)"
    if [ "${status}" != "install ok installed" ]; then
        missing+=("${pkg}")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup.sh: missing ${missing[*]} and this is not a Debian-family host; install them by hand." >&2
        exit 1
    fi
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo_cmd=(sudo)
    fi
    echo "setup.sh: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "setup.sh: podman $(podman --version | awk '{print $3}'), CONTAINERS_CONF=${CONTAINERS_CONF}"
