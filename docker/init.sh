#!/usr/bin/env bash
# One-off set-up of a ragas-ops deployment, run by the `airflow-init` service before anything
# else starts. Idempotent: running it again updates pools and connections in place.
# Everything comes from the environment (docker/.env); nothing secret is written to a file.
set -euo pipefail

: "${S3_ENDPOINT_URL:?}" "${S3_ACCESS_KEY:?}" "${S3_SECRET_KEY:?}" "${AIRFLOW_ADMIN_PASSWORD:?}"

echo "== metadata database"
airflow db migrate

echo "== admin user ${AIRFLOW_ADMIN_USER:-admin}"
airflow users create --role Admin --username "${AIRFLOW_ADMIN_USER:-admin}" \
    --password "${AIRFLOW_ADMIN_PASSWORD}" --firstname Airflow --lastname Admin \
    --email "${AIRFLOW_ADMIN_EMAIL:-admin@example.com}" 2>&1 | grep -v "already exist" || true

echo "== pools (sizes from RAGAS_OPS_PIPELINE_POOL_SLOTS / _BACKFILL_POOL_SLOTS)"
airflow pools set "${RAGAS_OPS_PIPELINE_POOL:-ragas_ops_judge}" \
    "${RAGAS_OPS_PIPELINE_POOL_SLOTS:-4}" "ragas-ops nightly judge calls"
airflow pools set "${RAGAS_OPS_PIPELINE_BACKFILL_POOL:-ragas_ops_backfill}" \
    "${RAGAS_OPS_PIPELINE_BACKFILL_POOL_SLOTS:-2}" "ragas-ops backfills"

echo "== connections"
python - <<'PY'
"""The S3 and judge connections, from the environment, created or replaced."""
import json
import os

from airflow.models.connection import Connection
from airflow.utils.session import create_session

connections = [
    Connection(
        conn_id=os.environ.get("RAGAS_OPS_PIPELINE_AWS_CONN_ID", "ragas_ops_s3"),
        conn_type="aws",
        login=os.environ["S3_ACCESS_KEY"],
        password=os.environ["S3_SECRET_KEY"],
        extra=json.dumps(
            {
                "endpoint_url": os.environ["S3_ENDPOINT_URL"],
                "region_name": os.environ.get("S3_REGION", "us-east-1"),
            }
        ),
        description="ragas-ops: the lake and the warehouse",
    ),
    # The judge's endpoint and key for the scoring tasks and the batch trigger (judge.conn_id).
    Connection(
        conn_id="ragas_ops_judge",
        conn_type="openai",
        host=os.environ.get("RAGAS_OPS_JUDGE_BASE_URL") or "https://api.openai.com/v1",
        password=os.environ.get("OPENAI_API_KEY") or None,
        description="ragas-ops judge: the endpoint (host) and key (password) the tasks use",
    ),
]
with create_session() as session:
    for connection in connections:
        session.query(Connection).filter(Connection.conn_id == connection.conn_id).delete()
        session.add(connection)
        print(f"connection {connection.conn_id} ({connection.conn_type})")
PY

echo "== buckets"
python - <<'PY'
import os

import boto3
from botocore.exceptions import ClientError

s3 = boto3.client(
    "s3",
    endpoint_url=os.environ["S3_ENDPOINT_URL"],
    aws_access_key_id=os.environ["S3_ACCESS_KEY"],
    aws_secret_access_key=os.environ["S3_SECRET_KEY"],
    region_name=os.environ.get("S3_REGION", "us-east-1"),
)
for bucket in filter(None, (b.strip() for b in os.environ.get("S3_BUCKETS", "").split(","))):
    try:
        s3.head_bucket(Bucket=bucket)
        print(f"bucket {bucket}: exists")
    except ClientError:
        s3.create_bucket(Bucket=bucket)
        print(f"bucket {bucket}: created")
PY
echo "== iceberg catalog (RAGAS_OPS_WAREHOUSE_TABLE_FORMAT=${RAGAS_OPS_WAREHOUSE_TABLE_FORMAT:-parquet})"
if [ "${RAGAS_OPS_WAREHOUSE_TABLE_FORMAT:-parquet}" = "iceberg" ]; then
python - <<'PY'
"""The catalog's own database on the metadata server (pyiceberg creates its tables in it)."""
import os

import sqlalchemy
from sqlalchemy.engine import make_url

from ragas_ops.config import masked_catalog_uri

catalog = make_url(os.environ["RAGAS_OPS_WAREHOUSE_CATALOG_URI"])
server = sqlalchemy.create_engine(
    catalog.set(database="postgres"), isolation_level="AUTOCOMMIT"
)
name = catalog.database or ""
if not name.replace("_", "").isalnum():
    raise SystemExit(f"the catalog database name {name!r} must be letters, digits and _")
with server.connect() as connection:
    found = connection.execute(
        sqlalchemy.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
    ).first()
    if found is None:
        connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
print(f"catalog database {name}: {'exists' if found else 'created'}")
uri = os.environ["RAGAS_OPS_WAREHOUSE_CATALOG_URI"]
print(f"catalog {masked_catalog_uri(uri)}")
PY
fi
echo "== done"
