#!/usr/bin/env bash
# Build the podman image localhost/gpufleet-NAME from tests/containers/images/NAME.conf, only when
# it is missing or its recipe changed. The debootstrap result is cached as a tarball under
# .build/containers/images/, keyed by what debootstrap sees (suite, mirror, packages): the images of
# one Debian release share it, so the release is bootstrapped once and a lost or outdated image is
# rebuilt in seconds without downloading.
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
HOST_PYTHONS=()
# shellcheck source=/dev/null
. "${recipe}"
for required in SUITE MIRROR; do
    if [ -z "${!required}" ]; then
        echo "image.sh: ${recipe} does not set ${required}." >&2
        exit 2
    fi
done

# Each CPython of HOST_PYTHONS (an installation prefix on this machine, such as pyenv's) goes into
# the image as /opt/python/X.Y, without its tests, IDLE, Tk and site-packages. Its libpython is
# found through ld.so.conf.d: the RUNPATH it was built with names a directory the image lacks.
python_releases=()
python_ids=()
for prefix in "${HOST_PYTHONS[@]}"; do
    python_exe="$(find "${prefix}/bin" -maxdepth 1 -regex '.*/python3\.[0-9]+$' 2>/dev/null | sort | head -n 1)"
    if [ -z "${prefix}" ] || [ -z "${python_exe}" ] || ! "${python_exe}" -V >/dev/null 2>&1; then
        echo "image.sh: ${recipe} copies a CPython from this machine (HOST_PYTHONS: '${prefix}'), and there is" \
             "none that runs there; install it (pyenv install 3.12) or change the recipe." >&2
        exit 1
    fi
    release="$(basename "${python_exe}")"
    python_releases+=("${release#python}")
    python_ids+=("${prefix} $("${python_exe}" -VV)")
done

image="localhost/gpufleet-${name}"
cache="${GPUFLEET_CONTAINERS_DIR}/images"
init_helper="${here}/gpufleet-init"
mkdir -p "${cache}"

# base_name SUITE MIRROR INCLUDE: the tarball of the debootstrap of these. Only what debootstrap sees
# decides whether the slow step runs again; recipes that agree on it (a release's image and its -exo
# image, which adds files, not packages) share one.
base_name() {
    printf 'base-%s-%s.tar' "$1" "$(printf '%s\n' "$1" "$2" "$3" | sha256sum | cut -c1-16)"
}
include="$(IFS=,; echo "${INCLUDE[*]}")"
base_tarball="${cache}/$(base_name "${SUITE}" "${MIRROR}" "${include}")"
# The recipe's values (a recipe may source another), this script, the init helper and the copied
# Pythons define the final image.
image_hash="$( { printf '%s\n' "${SUITE}" "${MIRROR}" "${include}" "${SOURCES[@]}" "${MASK[@]}" "${python_ids[@]}";
                 cat "${BASH_SOURCE[0]}" "${init_helper}"; } | sha256sum | cut -c1-16)"

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

# The images sharing a base wait for one another while it is made.
exec 8>"${base_tarball%.tar}.lock"
flock 8
if [ ! -f "${base_tarball}" ] || [ -n "${GPUFLEET_IMAGE_REBUILD:-}" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
        echo "image.sh: debootstrap is missing; run tests/containers/setup.sh first." >&2
        exit 1
    }
    rootfs="$(mktemp -d "${cache}/${name}-rootfs.XXXXXX")"
    log="${base_tarball%.tar}-debootstrap.log"
    echo "image.sh: debootstrap ${SUITE} (minbase + ${include}), about a minute" >&2
    "${sudo_cmd[@]}" debootstrap --variant=minbase --include="${include}" \
        "${SUITE}" "${rootfs}" "${MIRROR}" >"${log}" 2>&1 || {
        echo "image.sh: debootstrap failed; the last lines of ${log}:" >&2
        tail -n 20 "${log}" >&2
        exit 1
    }
    "${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -cf "${base_tarball}.tmp" .
    "${sudo_cmd[@]}" mv "${base_tarball}.tmp" "${base_tarball}"
    flock -u 8
    # Tarballs no recipe asks for any more, and those of the older naming (one per image), are dead weight.
    wanted=()
    for other in "${here}"/images/*.conf; do
        # shellcheck disable=SC2016  # expanded by the inner bash, from the recipe it sources
        wanted+=("$(bash -c '. "$1"; IFS=,; printf "%s\n%s\n%s\n" "${SUITE}" "${MIRROR}" "${INCLUDE[*]}"' sh "${other}" \
                    | { read -r suite; read -r mirror; read -r packages; base_name "${suite}" "${mirror}" "${packages}"; })")
    done
    for stale in "${cache}"/*-base-*.tar "${cache}"/base-*.tar; do
        [ -f "${stale}" ] || continue
        case " ${wanted[*]} " in *" $(basename "${stale}") "*) ;; *) rm -f "${stale}" "${stale%.tar}.lock" ;; esac
    done
else
    flock -u 8
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
for index in "${!HOST_PYTHONS[@]}"; do
    prefix="${HOST_PYTHONS[$index]}"
    release="${python_releases[$index]}"
    stdlib="lib/python${release}"
    "${sudo_cmd[@]}" mkdir -p "${rootfs}/opt/python/${release}"
    tar -C "${prefix}" --exclude="${stdlib}/test" --exclude="${stdlib}/site-packages/*" \
        --exclude="${stdlib}/idlelib" --exclude="${stdlib}/tkinter" --exclude="${stdlib}/turtledemo" \
        --exclude="${stdlib}/config-${release}-*" --exclude="${stdlib}/lib-dynload/_tkinter*" \
        -cf - "bin/python${release}" "lib/libpython${release}.so.1.0" "${stdlib}" \
        | "${sudo_cmd[@]}" tar -C "${rootfs}/opt/python/${release}" -xf -
    echo "/opt/python/${release}/lib" | "${sudo_cmd[@]}" tee "${rootfs}/etc/ld.so.conf.d/python${release}.conf" >/dev/null
done
if [ "${#HOST_PYTHONS[@]}" -gt 0 ]; then
    "${sudo_cmd[@]}" ldconfig -r "${rootfs}"
fi

echo "image.sh: importing ${image}" >&2
"${sudo_cmd[@]}" tar --numeric-owner -C "${rootfs}" -c . | podman import --quiet \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change "LABEL gpufleet.recipe=${image_hash}" \
    --change "LABEL gpufleet.name=${name}" \
    - "${image}" >/dev/null
echo "${image}"
