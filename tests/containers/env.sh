# shellcheck shell=bash
# Source this file (bash): it points podman at the project's private containers.conf.
#
#   . tests/containers/env.sh
#
# Podman on a hybrid cgroup v1 host needs runc (crun refuses the setup) and ulimits that do not
# need CAP_SYS_RESOURCE; a private CONTAINERS_CONF keeps that out of the machine's own settings.
# The file is written here when missing, so sourcing works before setup.sh ever ran.

GPUFLEET_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GPUFLEET_CONTAINERS_DIR="${GPUFLEET_REPO_ROOT}/.build/containers"
export GPUFLEET_REPO_ROOT GPUFLEET_CONTAINERS_DIR

gpufleet_write_containers_conf() {
    local conf="${GPUFLEET_CONTAINERS_DIR}/containers.conf"
    local wanted
    wanted='# Written by tests/containers; edits are overwritten.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
'
    mkdir -p "${GPUFLEET_CONTAINERS_DIR}"
    if [ ! -f "${conf}" ] || [ "$(cat "${conf}")" != "$(printf '%s' "${wanted}")" ]; then
        printf '%s' "${wanted}" > "${conf}.tmp" && mv "${conf}.tmp" "${conf}"
    fi
}

gpufleet_write_containers_conf
export CONTAINERS_CONF="${GPUFLEET_CONTAINERS_DIR}/containers.conf"
