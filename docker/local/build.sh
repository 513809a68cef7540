#!/usr/bin/env bash
# The images of docker/compose.local.yaml, from Debian's packages and PyPI only (no registry):
#   docker/local/build.sh
# the Debian base (base.sh), then PostgreSQL, Redis, the S3 stand-in and the Airflow base on
# it, one after the other (a 2-core machine: no parallel builds). The builds use the host's
# network (`--network host`): where no container can reach the network through Docker's
# bridge (dockerd --iptables=false), apt and pip still can. Existing images are reused by
# Docker's layer cache. PIP_INDEX_URL and DEBIAN_MIRROR name mirrors.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
base="${DEBIAN_IMAGE:-ragas-ops-local/debian:bookworm}"
airflow_version="${AIRFLOW_VERSION:-3.3.2}"

"$here/base.sh" "$base"
build() {
    local image="$1" dockerfile="$2"
    local started=$SECONDS
    DOCKER_BUILDKIT=1 docker build --quiet --network host \
        --build-arg "DEBIAN_IMAGE=$base" \
        --build-arg "PIP_INDEX_URL=${PIP_INDEX_URL:-https://pypi.org/simple}" \
        --build-arg "AIRFLOW_VERSION=$airflow_version" \
        -f "$here/$dockerfile" -t "$image" "$here" >/dev/null
    echo "image $image: $((SECONDS - started)) s, $(docker image inspect -f '{{.Size}}' "$image") bytes"
}
build ragas-ops-local/postgres:15 postgres.Dockerfile
build ragas-ops-local/redis:7.0 redis.Dockerfile
build ragas-ops-local/s3:moto s3.Dockerfile
build "ragas-ops-local/airflow:${airflow_version}-python3.11" airflow.Dockerfile
