#!/usr/bin/env bash
# First start: initdb with POSTGRES_USER / POSTGRES_PASSWORD (scram, from the environment,
# never in a file that stays) and POSTGRES_DB; then PostgreSQL listening on the container's
# network only (the compose network; no port is published).
set -euo pipefail
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    initdb -D "$PGDATA" -U "$user" -A scram-sha-256 --pwfile="$password_file" >/dev/null
    rm -f "$password_file"
    echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
    export PGPASSWORD="$POSTGRES_PASSWORD"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
        psql -U "$user" -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    unset PGPASSWORD
    echo "initialised $PGDATA for $user"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
