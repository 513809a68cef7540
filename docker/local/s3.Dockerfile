# The object store on a machine that reaches no image registry: SeaweedFS has no Debian
# package, so moto's S3 server (PyPI) stands in, on port 8333 as SeaweedFS's S3 gateway.
# moto checks no credentials and keeps its buckets in memory only (a restart loses them):
# a test stand-in, not a store for real data.
ARG DEBIAN_IMAGE=ragas-ops-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
ARG PIP_INDEX_URL=https://pypi.org/simple
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 1000 --home-dir /home/s3 --create-home s3
ENV PATH=/opt/s3-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_INDEX_URL=${PIP_INDEX_URL} \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/s3-venv && pip install --no-cache-dir "moto[server]"
USER s3
EXPOSE 8333
CMD ["moto_server", "-H", "0.0.0.0", "-p", "8333"]
