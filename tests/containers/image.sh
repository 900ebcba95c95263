#!/usr/bin/env bash
# Build the podman image localhost/gpufleet-NAME from tests/containers/images/NAME.conf, only when
# it is missing or its recipe changed. The debootstrap result is cached as a tarball under
# .build/containers/images/, so a lost or outdated image is rebuilt in seconds without downloading.
#
#   tests/containers/image.sh debian12                          # build if needed, print the name
#   GPUFLEET_IMAGE_REBUILD=1 tests/containers/image.sh debian12 # ignore both caches
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/containers/env.sh
. "${here}/env.sh"

usage() {
    echo "usage: $0 NAME   (NAME is one of: $(cd "${here}/images" && for f in *.conf; do printf '%s ' "${f%.conf}"; done))" >&2
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
MASK=()
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
init_helper="${here}/gpufleet-init"
mkdir -p "${cache}"

include="$(IFS=,; echo "${INCLUDE[*]}")"
# Only what debootstrap sees decides whether the slow step runs again.
base_hash="$(printf '%s\n' "${SUITE}" "${MIRROR}" "${include}" | sha256sum | cut -c1-16)"
base_tarball="${cache}/${name}-base-${base_hash}.tar"
# The whole recipe, this script and the init helper define the final image.
image_hash="$(cat "${recipe}" "${BASH_SOURCE[0]}" "${init_helper}" | sha256sum | cut -c1-16)"

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

# Several test runs may ask for the same image at once; one builds, the others wait for it.
exec 9>"${cache}/${name}.lock"
flock 9

current_hash="$(podman image inspect --format '{{ index .Labels "gpufleet.recipe" }}' "${image}" 2>/dev/null || true)"
if [ "${current_hash}" = "${image_hash}" ] && [ -z "${GPUFLEET_IMAGE_REBUILD:-}" ]; then
    echo "${image}"
    exit 0
fi

rootfs=""
cleanup() {
    if [ -n "${rootfs}" ]; then
        "${sudo_cmd[@]}" rm -rf --one-file-system "${rootfs}"
    fi
}
trap cleanup EXIT

if [ ! -f "${base_tarball}" ] || [ -n "${GPUFLEET_IMAGE_REBUILD:-}" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
        echo "image.sh: debootstrap is missing; run tests/containers/setup.sh first." >&2
        exit 1
    }
    rootfs="$(mktemp -d "${cache}/${name}-rootfs.XXXXXX")"
    echo "image.sh: debootstrap ${SUITE} (minbase + ${include}), about a minute" >&2
    "${sudo_cmd[@]}" debootstrap --variant=minbase --include="${include}" \
        "${SUITE}" "${rootfs}" "${MIRROR}" >"${cache}/${name}-debootstrap.log" 2>&1 || {
        echo "image.sh: debootstrap failed; the last lines of ${cache}/${name}-debootstrap.log:" >&2
        tail -n 20 "${cache}/${name}-debootstrap.log" >&2
        exit 1
    }
    "${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -cf "${base_tarball}.tmp" .
    "${sudo_cmd[@]}" mv "${base_tarball}.tmp" "${base_tarball}"
    # Tarballs of older recipes for this image are dead weight.
    find "${cache}" -maxdepth 1 -name "${name}-base-*.tar" ! -name "$(basename "${base_tarball}")" -delete
else
    rootfs="$(mktemp -d "${cache}/${name}-rootfs.XXXXXX")"
    "${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -xf "${base_tarball}"
fi

if [ "${#SOURCES[@]}" -gt 0 ]; then
    printf '%s\n' "${SOURCES[@]}" | "${sudo_cmd[@]}" tee "${rootfs}/etc/apt/sources.list" >/dev/null
fi
# Each container gets its own machine id at first boot; a baked-in one would be shared.
"${sudo_cmd[@]}" truncate -s 0 "${rootfs}/etc/machine-id"
"${sudo_cmd[@]}" rm -f "${rootfs}/var/lib/dbus/machine-id"
# Package caches only make the image bigger; apt fetches fresh lists in the container.
"${sudo_cmd[@]}" rm -rf "${rootfs}/var/cache/apt/archives/"*.deb "${rootfs}/var/lib/apt/lists/"*
# Dated as never updated: Ansible's apt cache_valid_time reads this directory's age, and a fresh
# one would make it skip the update and find no packages.
"${sudo_cmd[@]}" touch -d @0 "${rootfs}/var/lib/apt/lists"
for unit in "${MASK[@]}"; do
    "${sudo_cmd[@]}" ln -sf /dev/null "${rootfs}/etc/systemd/system/${unit}"
done
"${sudo_cmd[@]}" install -m 0755 "${init_helper}" "${rootfs}/usr/local/sbin/gpufleet-init"

echo "image.sh: importing ${image}" >&2
"${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -c . | podman import --quiet \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change "LABEL gpufleet.recipe=${image_hash}" \
    --change "LABEL gpufleet.name=${name}" \
    - "${image}" >/dev/null
echo "${image}"
