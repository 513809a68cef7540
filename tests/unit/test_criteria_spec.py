"""`[criteria.<name>]`: read and checked from the config file, versioned by its definition,
turned into a prompt whose steps come first and whose verdict is one of the levels."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from ragas_ops_testing.local_airflow.demo import DEMO_CRITERIA

from ragas_ops.config import ConfigError, Settings, apply_mapping
from ragas_ops.criteria.spec import PASS_FAIL, read_criterion
from ragas_ops.metrics.criteria import Criterion, criterion_prompt
from ragas_ops.metrics.criteria.double import coverage, level_for
from ragas_ops.prompts import OutputParseError
from ragas_ops.quality.regression import ScoredWith

DOCS = Path(__file__).resolve().parents[2] / "docs" / "criteria.md"


def demo() -> dict[str, object]:
    return tomllib.loads(DEMO_CRITERIA)["criteria"]  # type: ignore[no-any-return]


def test_the_docs_show_the_demos_criteria_as_they_are() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert DEMO_CRITERIA in blocks


def test_criteria_are_scored_after_the_metrics_named() -> None:
    settings = Settings()
    apply_mapping(settings, tomllib.loads(DEMO_CRITERIA), source="demo")
    assert settings.metrics.names[-2:] == ("cites_source", "completeness")
    apply_mapping(settings, {"metrics": {"names": ["completeness", "faithfulness"]}}, "cli")
    assert settings.metrics.names == ("completeness", "faithfulness", "cites_source")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"reads": ["answer"]}, "criterion must be the criterion's text"),
        ({"criterion": "x", "reads": []}, "reads must name the fields"),
        ({"criterion": "x", "reads": ["answer"], "scale": {"1": "only one"}}, "at least two"),
        ({"criterion": "x", "reads": ["answer"], "scale": {"1": "a", "2": ""}}, "description"),
        ({"criterion": "x", "reads": ["answer"], "rubric": {}}, "unknown key(s) ['rubric']"),
        (
            {"criterion": "x", "reads": ["answer"], "examples": [{"answer": "a", "level": "ok"}]},
            "level must be one of ['fail', 'pass']",
        ),
        (
            {
                "criterion": "x",
                "reads": ["answer"],
                "examples": [{"question": "q", "level": "pass"}],
            },
            "exactly the fields the criterion reads",
        ),
    ],
)
def test_a_bad_criterion_is_refused_naming_its_table(
    table: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        read_criterion("tone", table, "team.toml")
    assert "team.toml [criteria.tone]" in str(error.value)


def test_a_name_that_cannot_name_columns_is_refused() -> None:
    with pytest.raises(ConfigError, match="lower-case letters"):
        read_criterion("Tone-Check", {"criterion": "x", "reads": ["answer"]}, "team.toml")


def test_the_version_changes_with_every_part_of_the_definition_and_not_with_the_name() -> None:
    base = {"criterion": "Polite.", "reads": ["answer"]}
    version = read_criterion("tone", base, "f").version
    assert read_criterion("manners", base, "f").version == version
    variants = [
        {**base, "criterion": "Polite!"},
        {**base, "reads": ["question", "answer"]},
        {**base, "steps": ["Read it."]},
        {**base, "scale": {"1": "rude", "2": "polite"}},
        {**base, "examples": [{"answer": "Hi.", "level": "pass"}]},
    ]
    versions = {read_criterion("tone", table, "f").version for table in variants}
    assert len(versions) == len(variants)
    assert version not in versions


def test_levels_are_scored_linearly_worst_first() -> None:
    scale = read_criterion(
        "c", {"criterion": "x", "reads": ["answer"], "scale": {"5": "e", "1": "a", "3": "c"}}, "f"
    )
    assert scale.level_names == ("1", "3", "5")
    assert [scale.score_of(level) for level in scale.level_names] == [0.0, 0.5, 1.0]
    assert read_criterion("p", {"criterion": "x", "reads": ["answer"]}, "f").levels == PASS_FAIL


def test_the_prompt_puts_the_steps_first_and_the_verdict_after_a_reason() -> None:
    spec = read_criterion("completeness", demo()["completeness"], "demo")
    prompt = criterion_prompt(spec)
    system = prompt.system
    assert system.index("Evaluation steps:") < system.index("Levels, worst first:")
    assert '- "4": Addresses most of the question' in system
    assert prompt.name == f"criterion.completeness.{spec.version}"
    schema = prompt.json_schema
    assert list(schema["properties"]) == ["reason", "verdict"]
    assert schema["properties"]["verdict"]["enum"] == ["1", "2", "3", "4", "5"]
    assert prompt.parse({}, '{"reason": "half", "verdict": "3"}').verdict == "3"
    with pytest.raises(OutputParseError):
        prompt.parse({}, '{"reason": "half", "verdict": "7"}')
    assert "Example 1." in system  # the example, as a worked one
    assert Criterion(spec).version_label.startswith(f"completeness/criterion-{spec.version} (")


def test_the_test_judges_rule_is_the_reference_words_the_answer_holds() -> None:
    spec = read_criterion("cites_source", demo()["cites_source"], "demo")
    data = {"answer": "It opened in 2004 (Source: KB-7.)", "citations": ["KB-7"]}
    share, judged, reference, found = coverage(spec, data)
    assert (share, judged, reference, found) == (1.0, "answer", "citations", ["7", "kb"])
    assert level_for(spec, share) == "pass"
    assert level_for(spec, coverage(spec, {**data, "citations": ["DOC-9"]})[0]) == "fail"


def test_a_changed_criterion_is_named_as_such_by_the_regression_check() -> None:
    before = ScoredWith("j", "e", "tone/criterion-aaaaaaaaaaaa (criterion.tone.aaaaaaaaaaaa/v1)")
    after = ScoredWith("j", "e", "tone/criterion-bbbbbbbbbbbb (criterion.tone.bbbbbbbbbbbb/v1)")
    assert before.differences(after, "tone") == [
        "criterion tone changed (version aaaaaaaaaaaa to bbbbbbbbbbbb)"
    ]
    metric = ScoredWith("j", "e", "faithfulness/v2 (x/v1)")
    assert metric.differences(ScoredWith("j", "e", "faithfulness/v3 (x/v1)"), "faithfulness") == [
        "the faithfulness version changed from faithfulness/v2 (x/v1) to faithfulness/v3 (x/v1)"
    ]
