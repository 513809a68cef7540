"""Adding a judge provider is adding a package: a toy provider (`tests/fixtures/toy_provider`),
installed by this test only (its distribution's entry point in `ragas_ops.judge_providers`),
scores a Parquet file with `ragas-ops score --judge toy`, every row, with no file outside its
package naming it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.cli.main import EXIT_OK, EXIT_USAGE, main
from tests.fixtures import toy_provider

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
CONTEXT = (
    "The Millau Viaduct is a cable-stayed bridge in southern France. It opened to traffic "
    "in December 2004. Its tallest mast rises 343 metres above the river Tarn."
)
ANSWERS = [
    "The Millau Viaduct opened to traffic in December 2004.",
    "The Millau Viaduct opened in 2004. It was painted blue by Gustave Eiffel.",
    "The viaduct crosses the river Tarn in southern France.",
    "It opened in 1850 and was built of wood by the Romans.",
]
ROWS = pa.table(
    {
        "id": [f"row-{number}" for number in range(len(ANSWERS))],
        "question": ["When did the Millau Viaduct open?"] * len(ANSWERS),
        "contexts": [[CONTEXT]] * len(ANSWERS),
        "answer": ANSWERS,
    }
)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.syspath_prepend(str(toy_provider.install(tmp_path / "site-packages")))
    yield toy_provider.NAME
    toy_provider.forget()


def score(source: Path, target: Path, kind: str) -> int:
    return main(["score", str(source), str(target), "--judge", kind, "--no-progress"])


def test_an_unregistered_provider_is_an_unknown_judge_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq.write_table(ROWS, tmp_path / "logs.parquet")
    assert score(tmp_path / "logs.parquet", tmp_path / "out.parquet", "toy") == EXIT_USAGE
    assert "unknown judge kind 'toy'; the known kinds: local, openai" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()


def test_a_toy_provider_registered_by_its_test_scores_every_row_with_score(
    toy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq.write_table(ROWS, tmp_path / "logs.parquet")

    assert score(tmp_path / "logs.parquet", tmp_path / "out.parquet", toy) == EXIT_OK

    scored = pq.read_table(tmp_path / "out.parquet")
    assert scored["id"].to_pylist() == ROWS["id"].to_pylist()  # every row, once, in order
    assert set(scored["judge"].to_pylist()) == {toy_provider.CHAT_MODEL}
    for metric in METRICS:
        assert set(scored[f"{metric}_status"].to_pylist()) == {"ok"}, metric
        values = scored[f"{metric}_score"].to_pylist()
        assert all(0.0 <= value <= 1.0 for value in values), metric
    # The rules tell the sample's rows apart: a scorer that gave every row one value fails.
    assert len(set(scored["faithfulness_score"].to_pylist())) > 1
    assert "a toy judge: registered rules, no model" in capsys.readouterr().out
