"""Apache Superset on this machine with the "RAG quality" dashboard over the demo's warehouse:
`make dashboard` (`up`) and `make dashboard-down` (`down`).

Superset lives in a venv of its own (`.venv-superset`, built by the Makefile): it pins
SQLAlchemy, pandas, numpy and pyarrow below what Airflow and ragas-ops take. This launcher runs
in ragas-ops's venv and drives Superset's CLI in the other one. `up`:

1. writes the DuckDB database of views over the warehouse (`quality.bi_database`), Parquet or
   Iceberg as the warehouse holds;
2. makes a Superset home, `.superset/` by default: its config (a generated secret key, SQLite
   metadata, the admin's password generated into a file only its owner reads), then
   `superset db upgrade`, `fab create-admin` (the password on stdin, never on a command line),
   `init`;
3. imports the dashboard's bundle (`quality.superset.bundle_zip`) pointed at that database,
   with DuckDB's avro and iceberg extensions preloaded from the Superset venv's packages;
4. starts `superset run` on 127.0.0.1 in a process group of its own, waits for /health and
   prints the dashboard's URL and where the password is.

`down` stops that process group. A second `up` reuses the home and refreshes the database.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragas_ops.config import Settings, settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.quality.bi_database import write_bi_database
from ragas_ops.quality.superset import DASHBOARD_SLUG, bundle_zip, duckdb_uri
from ragas_ops.tables.format import local_table_formats
from ragas_ops_testing.local_airflow.checkout import PROJECT
from ragas_ops_testing.local_airflow.demo import demo_environment
from ragas_ops_testing.local_airflow.processes import (
    LauncherError,
    free_port,
    group_alive,
    stop_group,
)

DEFAULT_HOME = Path(".superset")
DEFAULT_DEMO = Path("demo")
DEFAULT_VENV = PROJECT / ".venv-superset"
DEFAULT_PORT = 8088
ADMIN = "admin"
PASSWORD_FILE = "admin-password"  # noqa: S105 (the file's name)
SECRET_KEY_FILE = "secret-key"  # noqa: S105 (the file's name)
CONFIG_FILE = "superset_config.py"
DATABASE_FILE = "ragas_ops_bi.duckdb"
STATE_FILE = "superset-up.json"
LOG_FILE = "superset.log"
BUNDLE_FILE = "rag_quality_dashboard.zip"
# Superset's metadata on SQLite, its secret key read from a file (the config holds no secret).
CONFIG = """\
from pathlib import Path

HOME = Path({home!r})
SECRET_KEY = (HOME / {secret!r}).read_text().strip()
SQLALCHEMY_DATABASE_URI = "sqlite:///" + str(HOME / "superset.db")
# one process, no Celery or Redis: results are cached in memory
CACHE_CONFIG = {{"CACHE_TYPE": "SimpleCache"}}
DATA_CACHE_CONFIG = {{"CACHE_TYPE": "SimpleCache"}}
"""


@dataclass(frozen=True)
class SupersetHome:
    """Where a local Superset lives and which venv runs it."""

    home: Path
    venv: Path

    def path(self, name: str) -> Path:
        return self.home / name

    @property
    def superset(self) -> str:
        return str(self.venv / "bin" / "superset")

    def environment(self) -> dict[str, str]:
        """Superset's environment: its config, nothing of this process's Python path."""
        environment = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("PYTHON", "SUPERSET_", "FLASK_"))
        }
        environment.update(
            SUPERSET_CONFIG_PATH=str(self.path(CONFIG_FILE)),
            SUPERSET_HOME=str(self.home),
            FLASK_APP="superset",
        )
        return environment


def demo_settings(
    demo: Path, environ: Mapping[str, str], warehouse_uri: str | None = None
) -> Settings:
    """The demo's settings (its lake, its segments), or with `warehouse_uri` another
    warehouse (yours: `make dashboard WAREHOUSE=...`); the table format the warehouse holds
    unless RAGAS_OPS_WAREHOUSE_TABLE_FORMAT names one."""
    environment = {**environ, **demo_environment(demo.resolve(), key_set=True)}
    if warehouse_uri is not None:
        local = "://" not in warehouse_uri
        chosen = str(Path(warehouse_uri).resolve()) if local else warehouse_uri
        if local and not Path(chosen).is_dir():
            raise LauncherError(f"--warehouse {warehouse_uri}: no such folder")
        environment["RAGAS_OPS_PIPELINE_WAREHOUSE_URI"] = chosen
    if "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT" not in environ:
        warehouse = Path(environment["RAGAS_OPS_PIPELINE_WAREHOUSE_URI"])
        formats = sorted(local_table_formats(warehouse))
        if len(formats) == 1:
            environment["RAGAS_OPS_WAREHOUSE_TABLE_FORMAT"] = formats[0]
    return settings_from_environment(environment)


def write_private(path: Path, text: str) -> None:
    """A file only its owner reads, created so (never readable in between)."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text + "\n")


def prepare_home(superset: SupersetHome) -> None:
    """The config, the secret key and the admin's password (kept across `up`s)."""
    superset.home.mkdir(parents=True, exist_ok=True)
    for name, size in ((SECRET_KEY_FILE, 48), (PASSWORD_FILE, 24)):
        if not superset.path(name).exists():
            write_private(superset.path(name), secrets.token_urlsafe(size))
    config = CONFIG.format(home=str(superset.home), secret=SECRET_KEY_FILE)
    superset.path(CONFIG_FILE).write_text(config)


def run_superset(superset: SupersetHome, *arguments: str, stdin: str | None = None) -> None:
    """One Superset command, its output appended to the log; an error names the command."""
    with superset.path(LOG_FILE).open("a") as log:
        log.write(f"\n$ superset {' '.join(arguments)}\n")
        log.flush()
        done = subprocess.run(  # noqa: S603 (the venv's own superset)
            [superset.superset, *arguments],
            env=superset.environment(),
            input=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        log_path = superset.path(LOG_FILE)
        failed = f"`superset {arguments[0]}` failed (exit {done.returncode})"
        raise LauncherError(f"{failed}: see {log_path}")


def extension_paths(venv: Path) -> list[str]:
    """DuckDB's avro and iceberg extension files of the Superset venv's packages, quoted for
    `LOAD` (none when the packages are not there: a Parquet warehouse does without)."""
    probe = (
        "import duckdb, importlib.util, json, pathlib\n"
        "found = []\n"
        "for name in ('avro', 'iceberg'):\n"
        "    spec = importlib.util.find_spec('duckdb_extension_' + name)\n"
        "    for folder in (spec.submodule_search_locations or []) if spec else []:\n"
        "        found += [str(p) for p in pathlib.Path(folder).glob("
        "f'extensions/v{duckdb.__version__}/{name}.duckdb_extension')]\n"
        "print(json.dumps(found))\n"
    )
    done = subprocess.run(  # noqa: S603 (the Superset venv's python)
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [f"'{path}'" for path in json.loads(done.stdout)]


def import_dashboard(superset: SupersetHome, database: Path) -> Path:
    """The bundle, pointed at `database`, imported for the admin."""
    bundle = bundle_zip(
        superset.path(BUNDLE_FILE), duckdb_uri(database), extension_paths(superset.venv)
    )
    run_superset(superset, "import-dashboards", "-p", str(bundle), "-u", ADMIN)
    return bundle


def initialise(superset: SupersetHome) -> None:
    """A Superset home ready to import into: its config, metadata database and admin."""
    prepare_home(superset)
    run_superset(superset, "db", "upgrade")
    password = superset.path(PASSWORD_FILE).read_text().strip()
    run_superset(
        superset,
        *("fab", "create-admin", "--username", ADMIN, "--firstname", "RAG"),
        *("--lastname", "Quality", "--email", "admin@localhost"),
        stdin=f"{password}\n{password}\n",
    )
    run_superset(superset, "init")


def set_up(superset: SupersetHome, settings: Settings) -> dict[str, object]:
    """Everything but the server: the database, Superset's metadata, the admin, the bundle."""
    prepare_home(superset)
    written = write_bi_database(superset.path(DATABASE_FILE), Lake(settings.pipeline), settings)
    initialise(superset)
    import_dashboard(superset, superset.path(DATABASE_FILE))
    return written


def start(superset: SupersetHome, port: int, timeout: float) -> str:
    """`superset run` on 127.0.0.1 in a group of its own; its URL once /health answers."""
    log = superset.path(LOG_FILE).open("a")
    process = subprocess.Popen(  # noqa: S603 (the venv's own superset)
        [superset.superset, "run", "-h", "127.0.0.1", "-p", str(port), "--with-threads"],
        env=superset.environment(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    superset.path(STATE_FILE).write_text(json.dumps({"group": process.pid, "url": url}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log_path = superset.path(LOG_FILE)
            raise LauncherError(f"Superset exited ({process.returncode}): see {log_path}")
        if get_json_text(f"{url}/health") == "OK":
            return url
        time.sleep(1)
    stop_group(process.pid)
    raise LauncherError(f"Superset did not answer at {url}/health in {timeout:.0f} s")


def get_json_text(url: str) -> str | None:
    """/health answers `OK` (text, not JSON)."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as response:
            return str(response.read().decode().strip())
    except OSError:
        return None


def running_group(home: Path) -> int | None:
    state = home / STATE_FILE
    if not state.exists():
        return None
    group = int(json.loads(state.read_text())["group"])
    return group if group_alive(group) else None


def up(
    home: Path = DEFAULT_HOME,
    *,
    demo: Path = DEFAULT_DEMO,
    venv: Path = DEFAULT_VENV,
    port: int = DEFAULT_PORT,
    timeout: float = 120,
    warehouse: str | None = None,
) -> int:
    """Set up and start Superset with the dashboard over the demo's warehouse, or over
    `warehouse` (the module)."""
    home = home.resolve()
    if running_group(home):
        say(f"Superset already runs from {home}; `make dashboard-down` stops it")
        return 1
    if not (venv / "bin" / "superset").exists():
        raise LauncherError(f"no Superset in {venv}: `make dashboard` builds it")
    started = time.monotonic()
    settings = demo_settings(demo, os.environ, warehouse)
    superset = SupersetHome(home, venv.resolve())
    say(f"warehouse: {settings.pipeline.warehouse_uri} ({settings.warehouse.table_format})")
    written = set_up(superset, settings)
    say(f"views over {written['days']} day(s): {DATABASE_FILE} in {home}")
    chosen = free_port(port)
    if port and chosen != port:
        say(f"port {port} is taken: using {chosen}")
    url = start(superset, chosen, timeout)
    dashboard = f"{url}/superset/dashboard/{DASHBOARD_SLUG}/"
    say(f"Superset is ready in {time.monotonic() - started:.0f} s: {dashboard}")
    say(f"login: {ADMIN}, password in {superset.path(PASSWORD_FILE)}")
    say("stop it: make dashboard-down")
    return 0


def down(home: Path = DEFAULT_HOME) -> int:
    """Stop the Superset `up` started from `home`."""
    group = running_group(home.resolve())
    if group is None:
        say(f"no Superset runs from {home}")
        return 0
    stop_group(group)
    say("Superset stopped")
    return 0


def say(line: str) -> None:
    print(f"dashboard: {line}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragas_ops_testing.local_superset")
    parser.add_argument("command", choices=("up", "down"))
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--demo", type=Path, default=DEFAULT_DEMO, help="the demo's folder")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Superset's venv")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--warehouse", help="another warehouse than the demo's (a folder, s3://)")
    arguments = parser.parse_args(argv)
    try:
        if arguments.command == "down":
            return down(arguments.home)
        return up(
            arguments.home,
            demo=arguments.demo,
            venv=arguments.venv,
            port=arguments.port,
            warehouse=arguments.warehouse,
        )
    except (LauncherError, FileNotFoundError) as error:
        print(f"dashboard: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
