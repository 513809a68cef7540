# The commands a developer types every day. Everything runs in .venv, created on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install test lint typecheck unit integration demo bench bench-reference clean

# .ci/venv: torch's CPU build from pip first (so [local-torch] pulls no CUDA torch), then the
# rest with uv, held to that torch (pip alone where uv cannot be installed), with the test kit
# (testkit/: the test judge, a distribution of its own that `pip install ragas-ops` leaves out).
$(BIN)/ragas-ops: pyproject.toml testkit/pyproject.toml .ci/venv
	PYTHON=$(PYTHON) .ci/venv $(VENV) dev,local,local-torch,airflow torch testkit
	touch $@

install: $(BIN)/ragas-ops  ## create .venv with the package, the test kit and the development tools

.PHONY: airflow airflow-down cluster cluster-down cluster-test superset-venv dashboard dashboard-down dashboard-test

cluster: install  ## the compose topology as processes: PostgreSQL, Redis, S3 (moto), Airflow with 2 Celery workers, the test judge (docs/deploy.md)
	$(BIN)/python -m ragas_ops_testing.local_airflow.cluster up

cluster-down:  ## stop every process of `make cluster`
	$(BIN)/python -m ragas_ops_testing.local_airflow.cluster down

lint: install  ## ruff (lint and format check)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install  ## mypy, strict
	$(BIN)/mypy

# The integration tests mostly wait (on servers, subprocesses, Airflow), so they run in more
# pytest-xdist workers than there are cores; modules that build one expensive thing for all
# their tests keep them in one worker (XDIST_GROUPS in tests/conftest.py, --dist loadgroup).
# TEST_WORKERS=0 runs them in this process. Both print their 25 slowest durations for the next person.
TEST_WORKERS ?= 4
DURATIONS := --durations=25 --durations-min=1

unit: install  ## the unit tests only: fast, no servers (tests/unit)
	$(BIN)/pytest -q $(DURATIONS) tests/unit

integration: install  ## the integration tests: real HTTP, moto S3, dag.test() (tests/integration)
	$(BIN)/pytest -q $(DURATIONS) -n $(TEST_WORKERS) --dist loadgroup -m "not cluster and not superset" tests/integration

# The multi-worker scenario runs a whole cluster (make cluster) and wants the machine alone.
cluster-test: install  ## the multi-worker scenario over `make cluster` (tests/integration/cluster, a few minutes)
	$(BIN)/pytest -q $(DURATIONS) -n 0 -m cluster tests/integration/cluster

# The compose deployment in containers (docs/deploy.md): every image built here from Debian's
# packages and PyPI (no registry), two worker containers, one killed mid-night, then three, and
# `docker compose down -v` leaving nothing. Needs root, `apt-get install docker.io debootstrap`;
# starts dockerd if none runs. Not in `make test`: 12-30 minutes here with the images built
# (two cores at a load of 7-41), and 9 minutes more for the images from nothing (527 s here).
.PHONY: compose-test
compose-test: install  ## the compose deployment in real containers, a worker container killed (tests/integration/compose)
	docker/local/dockerd.sh
	$(BIN)/pytest -q -s $(DURATIONS) -n 0 -m cluster tests/integration/compose/test_compose_deployment.py

# mypy (one core for a minute or two) runs beside the unit tests (one core), the output of each
# printed in one piece when it ends; then the integration tests, which want both cores.
test: install  ## everything CI runs: lint, types, all the tests
	$(MAKE) --no-print-directory --output-sync=target -j2 lint typecheck unit
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory cluster-test

# The demo installs only what it runs (Airflow and the ONNX local judge, no PyTorch, no
# development tools) in a venv of its own, with the test kit: the demo and the local Airflow
# are its launchers (testkit/ragas_ops_testing/local_airflow).
# `RAGAS_OPS_WAREHOUSE_TABLE_FORMAT=iceberg make demo` keeps the demo's warehouse as Iceberg
# tables: the venv then gets the [iceberg] extra too (a stamp file per set of extras).
DEMO_VENV := .venv-demo
comma := ,
DEMO_EXTRAS := airflow,local,bi$(if $(filter iceberg,$(RAGAS_OPS_WAREHOUSE_TABLE_FORMAT)),$(comma)iceberg)
DEMO_STAMP := $(DEMO_VENV)/.installed-$(subst $(comma),-,$(DEMO_EXTRAS))

$(DEMO_STAMP): pyproject.toml testkit/pyproject.toml .ci/venv
	PYTHON=$(PYTHON) .ci/venv $(DEMO_VENV) $(DEMO_EXTRAS) testkit
	touch $@

demo: $(DEMO_STAMP)  ## run the nightly DAG on 7 days of generated logs (OpenAI if OPENAI_API_KEY is set, else the local judge)
	$(DEMO_VENV)/bin/ragas-ops demo

# The local Airflow needs what the demo needs (Airflow, the local judge), so it runs from the
# demo's venv too: not .venv, whose development tools and PyTorch it never imports.
airflow: $(DEMO_STAMP)  ## a real Airflow on this machine with the nightly DAG, its pools and a demo lake (docs/airflow-local.md)
	$(DEMO_VENV)/bin/ragas-ops airflow up

# From whichever venv there is (one that started it before this Makefile moved to .venv-demo).
airflow-down:  ## stop the Airflow of `make airflow`
	$(firstword $(wildcard $(DEMO_VENV)/bin/ragas-ops $(BIN)/ragas-ops) ragas-ops) airflow down

# Apache Superset (the RAG quality dashboard, docs/bi.md) lives in a venv of its own: it pins
# SQLAlchemy, pandas, numpy and pyarrow below Airflow's. The launcher runs from the demo's venv
# (it writes the DuckDB views over the demo's warehouse) and drives Superset's CLI in the other.
SUPERSET_VENV := .venv-superset
SUPERSET_REQUIREMENTS := ragas_ops/quality/superset/requirements.txt

# With the uv of the demo's (or the development) venv when there is one: 72 s with bytecode
# (uv's cache warm) against pip's 163 s, here at a load of 18-19.
SUPERSET_UV := $(firstword $(wildcard $(DEMO_VENV)/bin/uv $(BIN)/uv))

$(SUPERSET_VENV)/.installed: $(SUPERSET_REQUIREMENTS)
	$(PYTHON) -m venv $(SUPERSET_VENV)
	$(if $(SUPERSET_UV),$(SUPERSET_UV) pip install --quiet --compile-bytecode --python $(SUPERSET_VENV)/bin/python,$(SUPERSET_VENV)/bin/pip install --quiet) -r $(SUPERSET_REQUIREMENTS)
	touch $@

superset-venv: $(SUPERSET_VENV)/.installed  ## build .venv-superset (Apache Superset 6.1.0, DuckDB) only

dashboard: $(DEMO_STAMP) $(SUPERSET_VENV)/.installed  ## Apache Superset with the RAG quality dashboard over the demo's warehouse (or WAREHOUSE=folder), on 127.0.0.1 (after make demo)
	$(DEMO_VENV)/bin/python -m ragas_ops_testing.local_superset up $(if $(WAREHOUSE),--warehouse $(WAREHOUSE))

# The dashboard's test builds two demo lakes and a fresh Superset (minutes of CPU): not in `make
# test`. Without the venv (no package index) the test is skipped, saying why.
dashboard-test: install  ## the RAG quality dashboard in a fresh Superset, every chart's data, Parquet and Iceberg (tests/integration/e2e/test_superset_dashboard.py)
	-$(MAKE) --no-print-directory superset-venv
	$(BIN)/pytest -q $(DURATIONS) -n 0 -m superset tests/integration/e2e/test_superset_dashboard.py

dashboard-down:  ## stop the Superset of `make dashboard`
	$(firstword $(wildcard $(DEMO_VENV)/bin/python $(BIN)/python) python3) -m ragas_ops_testing.local_superset down

bench: install  ## the benchmarks of benchmarks/, printing their figures
	$(BIN)/python benchmarks/bench_scoring.py
	$(BIN)/python benchmarks/bench_pipeline.py
	$(BIN)/python benchmarks/bench_local_judge.py
	$(BIN)/python benchmarks/bench_capture.py
	$(BIN)/python benchmarks/bench_batch.py
	$(BIN)/python benchmarks/bench_ppi_coverage.py

# The reference library (ragas 0.4.3) lives in a venv of its own, never in .venv.
RAGAS_VENV := benchmarks/.venv-ragas

$(RAGAS_VENV)/.installed: benchmarks/reference/requirements.txt
	$(PYTHON) -m venv $(RAGAS_VENV)
	$(RAGAS_VENV)/bin/pip install --quiet -r benchmarks/reference/requirements.txt
	touch $@

bench-reference: install $(RAGAS_VENV)/.installed  ## ragas-ops side by side with ragas 0.4.3 (about 7 minutes)
	RAGAS_DO_NOT_TRACK=true $(BIN)/python benchmarks/bench_vs_ragas.py --json benchmarks/results/vs_ragas.json

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(RAGAS_VENV) $(SUPERSET_VENV) .superset .pytest_cache .mypy_cache .ruff_cache demo
