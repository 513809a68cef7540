#!/usr/bin/env bash
# As the official image's entrypoint: `bash`/`python`/an absolute path runs as given, anything
# else is an `airflow` subcommand (`api-server`, `celery worker`, ...).
set -euo pipefail
case "${1:-}" in
    bash | sh | python | python3 | airflow | /*) exec "$@" ;;
    *) exec airflow "$@" ;;
esac
