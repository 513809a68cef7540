# A stand-in for the official redis image from Debian's redis-server (7.0): listening on the
# container's network (the compose network; no port is published), data in /data.
ARG DEBIAN_IMAGE=ragas-ops-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
