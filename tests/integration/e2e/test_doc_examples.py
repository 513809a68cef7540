"""Every shell, Python, SQL and TOML example of README.md and docs/*.md runs as written, against the
demo's lake, or says in the doc why it cannot run here.

The module builds the demo's lake twice, once per warehouse format (`ragas-ops demo` with 20
rows a day instead of 200, the local judge, in a temporary folder that is each example's
working directory), and runs every fenced `bash`, `python` and `sql` block of the manual there:
- a block whose leading comment says `not runnable here: REASON` (it needs a live Airflow, an
  OpenAI key, S3, or is a sketch of the reader's own code) is skipped, with that reason;
- a block whose leading comment names `RAGAS_OPS_WAREHOUSE_TABLE_FORMAT=iceberg make demo`
  runs against the Iceberg demo, every other one against the Parquet demo;
- in shell blocks `make TARGET` is a dry run in the project (`make -n`: the target exists and
  its recipe expands) and `pip install -e ".[EXTRAS]"` checks the extras against
  pyproject.toml: what they would install is what this test's own venv already holds;
- a TOML block is a config file ragas-ops must load (`load_settings`);
- a shell block must exit 0 (`set -euo pipefail`), a Python block must not raise, and each SQL
  statement runs in a plain DuckDB (no extension downloads: offline they fail, as a reader's
  would) and must return at least one row, so that a path or a date the demo's lake does not
  have fails rather than passes on nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
DOCS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
LANGUAGES = {
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "python": "python",
    "sql": "sql",
    "toml": "toml",
}
NOT_RUNNABLE = "not runnable here:"
ICEBERG_DEMO = "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT=iceberg make demo"
DEMO_DAYS, DEMO_ROWS = 7, 20
DEMO_COMMAND = [sys.executable, "-m", "ragas_ops.cli", "demo"]

# The first test to use the `lakes` fixture pays for two demo builds (a minute each on a quiet
# machine, three on a busy one): more than the suite's default of 180 s per test. Every
# example's command has its own subprocess timeout as well.
pytestmark = pytest.mark.timeout(900)
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w-]*)\s*$")


@dataclass(frozen=True)
class Example:
    doc: Path
    line: int
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(PROJECT)}:{self.line}"

    def leading_comments(self) -> list[str]:
        prefix = "--" if self.language == "sql" else "#"  # TOML's comments are shell's
        comments = []
        for line in self.code.splitlines():
            if not line.strip().startswith(prefix):
                break
            comments.append(line.strip().removeprefix(prefix).strip())
        return comments

    @property
    def not_runnable_reason(self) -> str | None:
        for comment in self.leading_comments():
            if comment.lower().startswith(NOT_RUNNABLE):
                return comment[len(NOT_RUNNABLE) :].strip()
        return None

    @property
    def iceberg(self) -> bool:
        return any(ICEBERG_DEMO in comment for comment in self.leading_comments())


def examples(doc: Path) -> Iterator[Example]:
    """The fenced blocks of `doc` in a language this test runs, de-indented."""
    lines = doc.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        index += 1
        if not opening:
            continue
        start, indent = index, len(opening["indent"])
        while index < len(lines) and lines[index].strip() != "```":
            index += 1
        body = "\n".join(line[indent:] for line in lines[start:index])
        index += 1
        language = LANGUAGES.get(opening["language"])
        if language:
            yield Example(doc, start, language, body + "\n")


ALL = [example for doc in DOCS for example in examples(doc)]


def test_the_manual_has_examples_and_every_skipped_one_says_why() -> None:
    assert len(ALL) >= 20, [example.name for example in ALL]
    for example in ALL:
        reason = example.not_runnable_reason
        assert reason is None or len(reason) > 10, f"{example.name}: say why it cannot run"


def clean_environment(folder: Path) -> dict[str, str]:
    """This process's environment without Airflow's, ragas-ops's or OpenAI's settings, the
    checkout importable and its venv's commands (`ragas-ops`, `python`) first on PATH."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "RAGAS_OPS_", "OPENAI_"))
    }
    environment["PYTHONPATH"] = f"{PROJECT}:{PROJECT / 'testkit'}"  # the library, the test kit
    environment["PATH"] = f"{Path(sys.executable).parent}:{environment.get('PATH', '')}"
    environment["HOME"] = str(folder)  # nothing an example writes lands in the real home
    return environment


@dataclass(frozen=True)
class Lakes:
    parquet: Path
    iceberg: Path
    iceberg_output: str  # what the Iceberg demo said, run where the Parquet one had run


def build_demo(folder: Path, *, iceberg: bool) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    environment = clean_environment(folder)
    if iceberg:
        environment["RAGAS_OPS_WAREHOUSE_TABLE_FORMAT"] = "iceberg"
    done = subprocess.run(
        [*DEMO_COMMAND, "--days", str(DEMO_DAYS), "--rows", str(DEMO_ROWS)],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "verdict REGRESSION" in done.stdout, done.stdout  # the sample's bad last day
    return done.stdout


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Lakes:
    """The Parquet demo, and a copy of it switched to Iceberg (as a reader who follows the
    README would: `make demo`, then `RAGAS_OPS_WAREHOUSE_TABLE_FORMAT=iceberg make demo`)."""
    root = tmp_path_factory.mktemp("doc-examples")
    build_demo(root / "parquet", iceberg=False)
    shutil.copytree(root / "parquet", root / "iceberg")
    return Lakes(root / "parquet", root / "iceberg", build_demo(root / "iceberg", iceberg=True))


def test_switching_the_demo_to_iceberg_moves_the_parquet_tables_aside(lakes: Lakes) -> None:
    warehouse = lakes.iceberg / "demo" / "lake" / "warehouse"
    aside = warehouse.with_name("warehouse-parquet")
    assert f"parquet tables of an earlier demo moved to {aside.resolve()}" in lakes.iceberg_output
    assert (warehouse / "_iceberg_catalog.sqlite").exists()
    assert not (warehouse / "scored").exists(), "the README's Parquet query finds no old rows"
    assert (aside / "scored").is_dir()
    assert not (aside / "_iceberg_catalog.sqlite").exists()
    # one run's manifests per day: the Iceberg run's, not the Parquet run's beside them
    runs = {path.name for path in (warehouse / "runs").iterdir()}
    assert runs == {path.name for path in (aside / "runs").iterdir()}
    for day in runs:
        assert len(list((warehouse / "runs" / day).glob("*.json"))) == 1, day


# `make` and `pip install` in a shell example: checked, not run (see the module's docstring).
SHELL_PRELUDE = """
set -euo pipefail
make() { command make --dry-run --no-print-directory -C "$DOC_PROJECT" "$@" >/dev/null; }
pip() { "$DOC_PYTHON" "$DOC_PIP_CHECK" "$@"; }
"""

PIP_CHECK = """
import os, re, sys, tomllib
arguments = sys.argv[1:]
if arguments[:1] != ["install"]:
    sys.exit(f"pip {' '.join(arguments)}: this test checks only `pip install -e .[extras]`")
with open(os.path.join(os.environ["DOC_PROJECT"], "pyproject.toml"), "rb") as project:
    extras = tomllib.load(project)["project"]["optional-dependencies"]
for argument in arguments[1:]:
    found = re.fullmatch(r"\\.(?:\\[(.*)\\])?", argument)
    if argument.startswith("-") or found is None:
        if not argument.startswith("-"):
            sys.exit(f"pip install {argument}: only the project itself (-e .) is checked")
        continue
    for extra in filter(None, (found.group(1) or "").split(",")):
        if extra.strip() not in extras:
            sys.exit(f"pip install {argument}: no extra {extra!r} in pyproject.toml")
"""


def run_shell(example: Example, cwd: Path, environment: dict[str, str]) -> None:
    checker = cwd.parent / f"pip-check-{cwd.name}.py"
    checker.write_text(PIP_CHECK)
    environment = {
        **environment,
        "DOC_PROJECT": str(PROJECT),
        "DOC_PYTHON": sys.executable,
        "DOC_PIP_CHECK": str(checker),
    }
    run_example(example, ["bash", "-c", SHELL_PRELUDE + example.code], cwd, environment)


def run_python(example: Example, cwd: Path, environment: dict[str, str]) -> None:
    run_example(example, [sys.executable, "-c", example.code], cwd, environment)


def run_example(
    example: Example,
    command: list[str],
    cwd: Path,
    environment: dict[str, str],
    *,
    timeout: float = 300,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `command` for `example`; it must exit 0 (else its output tells why)."""
    finished = subprocess.run(
        command,
        input=stdin,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert finished.returncode == 0, (
        f"{example.name} failed ({finished.returncode}):\n{example.code}\n"
        f"{finished.stdout[-3000:]}\n{finished.stderr[-3000:]}"
    )
    return finished


SQL_RUNNER = """
import json, sys
import duckdb
con = duckdb.connect()
con.execute("SET autoinstall_known_extensions = false")
results = []
for statement in json.load(sys.stdin):
    results.append(len(con.execute(statement).fetchall()))
print(json.dumps(results))
"""


def sql_statements(code: str) -> list[str]:
    without_comments = "\n".join(line.split("--", 1)[0] for line in code.splitlines())
    return [statement.strip() for statement in without_comments.split(";") if statement.strip()]


def run_sql(example: Example, cwd: Path, environment: dict[str, str]) -> None:
    import json

    statements = sql_statements(example.code)
    finished = run_example(
        example,
        [sys.executable, "-c", SQL_RUNNER],
        cwd,
        environment,
        timeout=120,
        stdin=json.dumps(statements),
    )
    counts = json.loads(finished.stdout.strip().splitlines()[-1])
    empty = [statement for statement, count in zip(statements, counts, strict=True) if not count]
    assert not empty, f"{example.name}: no rows from the demo's lake for {empty}"


TOML_LOADER = """
import sys
from ragas_ops.config import load_settings
from pathlib import Path
load_settings(Path(sys.argv[1]), environ={})
"""


def run_toml(example: Example, cwd: Path, environment: dict[str, str]) -> None:
    """A TOML block is a config file (or a part of one) that ragas-ops loads as it is."""
    config = cwd.parent / f"example-{cwd.name}.toml"
    config.write_text(example.code)
    run_example(
        example, [sys.executable, "-c", TOML_LOADER, str(config)], cwd, environment, timeout=120
    )


RUNNERS = {"shell": run_shell, "python": run_python, "sql": run_sql, "toml": run_toml}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("example", ALL, ids=[example.name for example in ALL])
def test_the_example_runs_as_written(example: Example, lakes: Lakes) -> None:
    reason = example.not_runnable_reason
    if reason is not None:
        pytest.skip(f"{example.name}: {reason}")
    cwd = lakes.iceberg if example.iceberg else lakes.parquet
    before = {path.name for path in cwd.iterdir()}
    RUNNERS[example.language](example, cwd, clean_environment(cwd))
    # A path the demo does not make must fail, not appear (IcebergTables once created a
    # catalog for a warehouse it was only asked to read).
    assert "lake" not in {path.name for path in cwd.iterdir()} - before, example.name
