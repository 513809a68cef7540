"""The input contract over generated Parquet files (issue 30): random schemas drawn from the
contract's types and others, names in case and Unicode variants, extra columns named like
outputs or the partition key `dt`. Each file is scored alone (`score_file`) and the lot as one
day (`plan_day`): no error but a ContractError with its reason, each file accepted or rejected
with one, rows in = rows out, and no scored table with names a SQL reader would change."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import PipelineSettings, Settings
from ragas_ops.contract.inputs import ContractError
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.scoring.jobs import score_file
from tests.unit.test_scoring import RuleJudge

DAY = "2026-11-28"
FILES = 60
WORDS = ["refund", "policy", "Straße", "naïve", "日本", "", "x", "emoji 😀", "THE END."]
EXTRA_NAMES = [
    "app", "App", "APP", "ÄPP", "äpp", "straße", "STRASSE", "ﬁle", "file", "Question",
    "ANSWER", "contexts ", "faithfulness_score", "Faithfulness_Status", "JUDGE", "cost_usd",
    "scored_at", "dt", "DT", "Dt", "id", "timestamp", "model_version",
]  # fmt: skip


def text_values(generator: random.Random, rows: int) -> list[str | None]:
    return [
        None if generator.random() < 0.1 else " ".join(generator.choices(WORDS, k=3)) + "."
        for _ in range(rows)
    ]


def text_column(generator: random.Random, rows: int) -> pa.Array:
    values = text_values(generator, rows)
    kind = generator.choice(["string", "large_string", "dictionary", "int64", "binary"])
    if kind == "int64":
        return pa.array([generator.randint(0, 9) for _ in range(rows)])
    if kind == "dictionary":
        return pa.array(values, pa.string()).dictionary_encode()
    if kind == "binary":
        return pa.array([None if v is None else v.encode() for v in values], pa.binary())
    return pa.array(values, pa.large_string() if kind == "large_string" else pa.string())


def contexts_column(generator: random.Random, rows: int) -> pa.Array:
    lists = [text_values(generator, generator.randint(0, 3)) for _ in range(rows)]
    kind = generator.choice(["list", "large_list", "large_items", "string"])
    if kind == "string":
        return pa.array([" ".join(v for v in values if v) for values in lists])
    item = pa.large_string() if kind == "large_items" else pa.string()
    return pa.array(lists, pa.large_list(item) if kind == "large_list" else pa.list_(item))


def extra_column(generator: random.Random, rows: int) -> pa.Array:
    kind = generator.choice(["int64", "int32", "float64", "string", "bool", "timestamp"])
    if kind in ("int64", "int32"):
        return pa.array([generator.randint(-5, 5) for _ in range(rows)], getattr(pa, kind)())
    if kind == "float64":
        return pa.array([generator.random() for _ in range(rows)])
    if kind == "bool":
        return pa.array([generator.random() < 0.5 for _ in range(rows)])
    if kind == "timestamp":
        return pa.array([1_764_300_000_000_000 + i for i in range(rows)], pa.timestamp("us", "UTC"))
    return pa.array(text_values(generator, rows), pa.string())


def generated_file(generator: random.Random) -> pa.Table:
    rows = generator.randint(1, 6)
    names, arrays = [], []
    required = {
        "question": text_column,
        "contexts": contexts_column,
        "answer": text_column,
    }
    for name, make in required.items():
        if generator.random() < 0.95:  # now and then a required column is missing
            names.append(name)
            arrays.append(make(generator, rows))
    for name in generator.sample(EXTRA_NAMES, k=generator.randint(0, 3)):
        names.append(name)
        arrays.append(extra_column(generator, rows))
    if generator.random() < 0.05 and names:  # a name twice, as Parquet allows
        names.append(names[0])
        arrays.append(arrays[0])
    order = list(range(len(names)))
    generator.shuffle(order)
    return pa.Table.from_arrays([arrays[i] for i in order], names=[names[i] for i in order])


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    generator = random.Random(30)
    folder = tmp_path / "raw" / f"dt={DAY}"
    folder.mkdir(parents=True)
    paths = []
    for index in range(FILES):
        path = folder / f"part-{index:03d}.parquet"
        pq.write_table(generated_file(generator), path)
        paths.append(path)
    return paths


def assert_readable_by_sql(names: list[str]) -> None:
    folded = [name.casefold() for name in names]
    assert len(set(folded)) == len(folded), names
    assert "dt" not in folded, names


def test_every_generated_file_is_scored_row_for_row_or_rejected_with_a_reason(
    files: list[Path], tmp_path: Path
) -> None:
    settings = Settings()
    settings.judge.cache.path = None
    rejected_alone: dict[str, str] = {}
    for path in files:
        rows = pq.read_metadata(path).num_rows
        target = tmp_path / "scored" / f"{path.stem}.parquet"
        try:
            outcome = asyncio.run(
                score_file(str(path), str(target), settings, progress=False, judge=RuleJudge())
            )
        except ContractError as error:  # any other error fails the test
            rejected_alone[str(path)] = str(error)
        if str(path) in rejected_alone:
            assert rejected_alone[str(path)].strip(), path
            assert not target.exists()
            continue
        scored = pq.read_table(target)
        assert outcome.summary.rows == scored.num_rows == rows, path
        assert_readable_by_sql(scored.column_names)
    assert 0 < len(rejected_alone) < len(files), "the generator makes both kinds"
    reasons = " ".join(rejected_alone.values())
    for kind in ("differ only in case", "output column(s)", "a column 'd", "the contract needs"):
        assert kind in reasons, kind

    settings.pipeline = PipelineSettings(
        raw_uri=str(tmp_path / "raw"), warehouse_uri=str(tmp_path / "warehouse")
    )
    plan = plan_day(Lake(settings.pipeline), DAY, settings)
    reasons_of_day = {file.path: file.reason for file in plan.rejected}
    accepted = {file.path for file in plan.files}
    assert accepted | set(reasons_of_day) == {str(path) for path in files}
    assert not accepted & set(reasons_of_day)
    assert all(reason.strip() for reason in reasons_of_day.values())
    # judged on its own merits: a file refused alone is refused in the day, for that reason
    for path, reason in rejected_alone.items():
        assert reason in reasons_of_day[path] or reasons_of_day[path] in reason, path
    assert plan.rows == sum(pq.read_metadata(path).num_rows for path in accepted)
    assert plan.schema is not None
    assert_readable_by_sql(plan.schema.names)
