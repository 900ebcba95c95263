#!/usr/bin/env bash
# Build the podman image localhost/gpufleet-NAME from tests/containers/images/NAME.conf, only when
# it is missing or its recipe changed. The debootstrap root filesystem is cached as a tarball under
# .build/containers/images/, so a lost image is re-imported in seconds without downloading again.
#
#   tests/containers/image.sh debian12          # build if needed, print the image name
#   GPUFLEET_IMAGE_REBUILD=1 tests/containers/image.sh debian12   # ignore both caches
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/containers/env.sh
. "${here}/env.sh"

usage() {
    echo "usage: $0 NAME   (NAME is one of: $(cd "${here}/images" && ls ./*.conf | sed 's|^\./||; s|\.conf$||' | tr '\n' ' '))" >&2
    exit 2
}

[ "$#" -eq 1 ] || usage
name="$1"
recipe="${here}/images/${name}.conf"
if [ ! -f "${recipe}" ]; then
    echo "image.sh: no recipe ${recipe} for image '${name}'." >&2
    usage
fi

SUITE=""
MIRROR=""
SOURCES=()
INCLUDE=()
# shellcheck source=/dev/null
. "${recipe}"
for required in SUITE MIRROR; do
    if [ -z "${!required}" ]; then
        echo "image.sh: ${recipe} does not set ${required}." >&2
        exit 2
    fi
done

image="localhost/gpufleet-${name}"
cache="${GPUFLEET_CONTAINERS_DIR}/images"
mkdir -p "${cache}"
# The recipe and this script define the image; a change to either makes a new one.
recipe_hash="$(cat "${recipe}" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
tarball="${cache}/${name}-${recipe_hash}.tar"

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

# Several test runs may ask for the same image at once; one builds, the others wait for it.
exec 9>"${cache}/${name}.lock"
flock 9

current_hash="$(podman image inspect --format '{{ index .Labels "gpufleet.recipe" }}' "${image}" 2>/dev/null || true)"
if [ "${current_hash}" = "${recipe_hash}" ] && [ -z "${GPUFLEET_IMAGE_REBUILD:-}" ]; then
    echo "${image}"
    exit 0
fi

if [ ! -f "${tarball}" ] || [ -n "${GPUFLEET_IMAGE_REBUILD:-}" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
        echo "image.sh: debootstrap is missing; run tests/containers/setup.sh first." >&2
        exit 1
    }
    rootfs="$(mktemp -d "${cache}/${name}-rootfs.XXXXXX")"
    cleanup() { "${sudo_cmd[@]}" rm -rf --one-file-system "${rootfs}"; }
    trap cleanup EXIT

    include="$(IFS=,; echo "${INCLUDE[*]}")"
    echo "image.sh: debootstrap ${SUITE} (minbase + ${include}) into ${rootfs}" >&2
    "${sudo_cmd[@]}" debootstrap --variant=minbase --include="${include}" \
        "${SUITE}" "${rootfs}" "${MIRROR}" >"${cache}/${name}-debootstrap.log" 2>&1 || {
        echo "image.sh: debootstrap failed; the last lines of ${cache}/${name}-debootstrap.log:" >&2
        tail -n 20 "${cache}/${name}-debootstrap.log" >&2
        exit 1
    }

    if [ "${#SOURCES[@]}" -gt 0 ]; then
        printf '%s\n' "${SOURCES[@]}" | "${sudo_cmd[@]}" tee "${rootfs}/etc/apt/sources.list" >/dev/null
    fi
    # Each container gets its own machine id at first boot; a baked-in one would be shared.
    "${sudo_cmd[@]}" truncate -s 0 "${rootfs}/etc/machine-id"
    "${sudo_cmd[@]}" rm -f "${rootfs}/var/lib/dbus/machine-id"
    # Package caches only make the image bigger; apt fetches fresh lists in the container.
    "${sudo_cmd[@]}" rm -rf "${rootfs}/var/cache/apt/archives/"*.deb "${rootfs}/var/lib/apt/lists/"*
    # Units that wait for hardware or consoles a container does not have.
    for unit in getty@tty1.service console-getty.service systemd-firstboot.service \
                systemd-modules-load.service systemd-remount-fs.service sys-kernel-config.mount \
                sys-kernel-debug.mount sys-kernel-tracing.mount sys-fs-fuse-connections.mount; do
        "${sudo_cmd[@]}" ln -sf /dev/null "${rootfs}/etc/systemd/system/${unit}"
    done

    "${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -cf "${tarball}.tmp" .
    "${sudo_cmd[@]}" mv "${tarball}.tmp" "${tarball}"
    # Tarballs of older recipes for this image are dead weight.
    find "${cache}" -maxdepth 1 -name "${name}-*.tar" ! -name "$(basename "${tarball}")" -delete
fi

echo "image.sh: importing ${tarball} as ${image}" >&2
podman import \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change "LABEL gpufleet.recipe=${recipe_hash}" \
    --change "LABEL gpufleet.name=${name}" \
    "${tarball}" "${image}" >/dev/null
echo "${image}"
