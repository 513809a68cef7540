# A stand-in for the official postgres image from Debian's postgresql (15): the same contract
# (POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB at first start, data in
# /var/lib/postgresql/data, pg_isready), for a machine that reaches no image registry.
ARG DEBIAN_IMAGE=ragas-ops-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
USER postgres
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]
