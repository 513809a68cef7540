# A stand-in for the official apache/airflow image, built from Debian's packages and PyPI only
# (for a machine that reaches no image registry): Debian 12's Python 3.11, Airflow with the
# providers the compose deployment uses, the `airflow` user (50000, group 0), AIRFLOW_HOME
# /opt/airflow, and an entrypoint that runs `airflow <command>` as the official image's does.
#   docker build -f docker/local/airflow.Dockerfile -t ragas-ops-local/airflow:3.3.2-python3.11 docker/local
ARG DEBIAN_IMAGE=ragas-ops-local/debian:bookworm
FROM ${DEBIAN_IMAGE}

ARG AIRFLOW_VERSION=3.3.2
ARG PIP_INDEX_URL=https://pypi.org/simple
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv curl dumb-init procps \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home airflow \
    && mkdir -p /opt/airflow/dags /opt/airflow/plugins /opt/airflow/logs /opt/airflow-venv \
    && chown -R airflow:0 /opt/airflow /opt/airflow-venv

# pip trusts the system's CA bundle (the base's), not only its own.
ENV AIRFLOW_HOME=/opt/airflow \
    PATH=/opt/airflow-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_INDEX_URL=${PIP_INDEX_URL} \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
USER airflow
# celery below 5.7: the celery provider fails to import with 5.7.0 (docs/deploy.md).
RUN python3 -m venv /opt/airflow-venv \
    && pip install --no-cache-dir --upgrade pip \
    && pip install --no-cache-dir \
        "apache-airflow[celery,postgres,fab,redis]==${AIRFLOW_VERSION}" \
        "celery<5.7" psycopg2-binary asyncpg

COPY --chown=airflow:0 entrypoint.sh /entrypoint
WORKDIR /opt/airflow
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/entrypoint"]
CMD ["--help"]
