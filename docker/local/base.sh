#!/usr/bin/env bash
# A Debian base image from Debian's own packages, for a machine that reaches no image registry:
#   docker/local/base.sh [IMAGE]        (default ragas-ops-local/debian:bookworm)
# debootstrap (minbase) into a temporary folder, this machine's CA bundle copied in (so that
# apt and pip inside the builds trust what this machine trusts, an intercepting proxy
# included), then `docker import`. Does nothing when the image exists. Needs root, debootstrap
# and a Docker engine; about a minute on a quiet machine.
set -euo pipefail

image="${1:-ragas-ops-local/debian:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${DEBIAN_SUITE:-bookworm}"

if docker image inspect "$image" >/dev/null 2>&1; then
    echo "base image $image: exists"
    exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

root="$(mktemp -d "${TMPDIR:-/tmp}/ragas-ops-base.XXXXXX")"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=ca-certificates "$suite" "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# Into the bundle now, and where update-ca-certificates (run by a later package) adds it again.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/host-bundle.crt"
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $suite-security main
SOURCES
# Package lists and caches are fetched again by each build: none in the base.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    - "$image" >/dev/null
echo "base image $image: built ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
