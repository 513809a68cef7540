"""The README and the manual in docs/ say what the code does, and hold together.

The settings, the statuses and the output columns they document are the code's; the TOML
example is a config file that loads; every relative link and anchor leads somewhere; the
README stays a few screens long and its commands are the Makefile's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragas_ops.config import Settings, load_settings, section_keys
from ragas_ops.contract.outputs import METRIC_SUFFIXES, ROW_COLUMNS
from ragas_ops.contract.status import Status
from ragas_ops.quality.daily_metrics import DAILY_METRICS_SCHEMA
from ragas_ops.quality.judge_comparison import JUDGE_COMPARISON_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250
SECTIONS = ("judge", "metrics", "columns", "size_budget", "pipeline", "warehouse", "labels")

# Pages that other branches are adding at the same time as this one (judge faults, lake
# safety, the local judge, the quality report, Airflow on one machine). The index and the
# README link them already; until they land, a link to one of them is not checked. Once they
# are all on main, empty this list.
PAGES_FROM_OTHER_BRANCHES = frozenset({"judge-faults.md", "lake-safety.md", "local-judge.md"})


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def manual_text() -> str:
    return "\n".join(page.read_text() for page in pages())


def prose(markdown: str) -> str:
    """The text outside fenced code blocks and inline code spans."""
    without_fences = re.sub(r"^```.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", without_fences)


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the page's headings (a repeated heading gets -1, -2...)."""
    seen: dict[str, int] = {}
    found = set()
    fenceless = re.sub(r"^```.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", fenceless, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def table_rows(markdown: str, heading: str) -> list[list[str]]:
    """The cells of the first table below `heading`, without its header and divider rows."""
    below = markdown.split(f"\n{heading}\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(below) if line.startswith("|"))
    table = []
    for line in below[start:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
    return table[2:]


def test_the_configuration_example_loads(tmp_path: Path) -> None:
    (example,) = re.findall(
        r"```toml\n(.*?)```", (DOCS / "configuration.md").read_text(), flags=re.DOTALL
    )
    config = tmp_path / "ragas-ops.toml"
    config.write_text(example)

    settings = load_settings(config, environ={})

    assert settings.columns.question == "query"
    assert settings.pipeline.segments == ("app", "model_version")
    assert settings.prices["gpt-4o-mini"].cached_input_per_million == 0.075
    assert settings.judge.limits.budget_usd == 20.0
    assert settings.judge.candidate.model == "gpt-5-mini"
    assert settings.judge.candidate.sample == 0.05


def test_every_setting_is_documented() -> None:
    text = manual_text()
    settings = Settings()
    missing = [
        f"{section}.{key}"
        for section in SECTIONS
        for key in section_keys(type(getattr(settings, section)))
        if f"`{key}`" not in text and f"\n{key} = " not in text
    ]
    assert not missing, f"settings the README and docs/ do not explain: {missing}"


def documented_default(value: Any) -> str:
    """A default as the settings tables write it (backticks left out)."""
    if value is None or value == ():
        return "none"
    if isinstance(value, bool):
        return str(value).lower()  # as TOML writes it
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def same_default(cell: str, value: Any) -> bool:
    cell = cell.strip("`")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(cell) == float(value)
    return cell == documented_default(value)


SETTINGS_TABLES = [
    ("judge", "configuration.md", "### `[judge]`"),
    ("metrics", "configuration.md", "### `[metrics]`"),
    ("columns", "configuration.md", "### `[columns]`"),
    ("size_budget", "configuration.md", "### `[size_budget]`"),
    ("pipeline", "pipeline.md", "## Settings of the pipeline"),
    ("warehouse", "configuration.md", "### `[warehouse]`"),
    ("labels", "configuration.md", "### `[labels]`"),
]


@pytest.mark.parametrize(("section", "page", "heading"), SETTINGS_TABLES)
def test_the_settings_tables_list_every_setting_with_its_real_default(
    section: str, page: str, heading: str
) -> None:
    values = getattr(Settings(), section)
    defaults = {
        key: getattr(values if spec is None else getattr(values, spec), item.name)
        for key, (spec, item, _) in section_keys(type(values)).items()
    }
    documented: dict[str, str] = {}
    for names_cell, default_cell, *_ in table_rows((DOCS / page).read_text(), heading):
        names = [name.strip("` ") for name in names_cell.split(",")]
        values = default_cell.split(", ") if len(names) > 1 else [default_cell]
        assert len(values) == len(names), f"{page}: {names_cell} | {default_cell}"
        documented.update(zip(names, values, strict=True))

    assert sorted(documented) == sorted(defaults), f"{page} {heading}: rows vs settings"
    wrong = {
        name: (cell, defaults[name])
        for name, cell in documented.items()
        if not same_default(cell, defaults[name])
    }
    assert not wrong, f"{page} {heading}: documented default vs the code's: {wrong}"


def test_the_top_level_setting_is_in_the_table() -> None:
    rows = table_rows((DOCS / "configuration.md").read_text(), "### Top level and `[prices]`")
    assert [row[:2] for row in rows] == [["`batch_rows`", str(Settings().batch_rows)]]


def test_every_status_is_in_the_statuses_table() -> None:
    rows = table_rows((DOCS / "tables.md").read_text(), "## Statuses and edge cases")
    assert sorted(row[0].strip("`") for row in rows) == sorted(status.value for status in Status)


def test_every_output_column_is_in_the_output_table() -> None:
    text = (DOCS / "tables.md").read_text().split("\n## The output table\n", 1)[1]
    columns = [f"M_{suffix}" for suffix, _ in METRIC_SUFFIXES] + [name for name, _ in ROW_COLUMNS]
    assert [column for column in columns if f"`{column}`" not in text] == []


def test_every_daily_metrics_column_is_in_its_table() -> None:
    text = (DOCS / "tables.md").read_text().split("\n## The warehouse layout\n", 1)[1]
    assert [name for name in DAILY_METRICS_SCHEMA.names if f"`{name}`" not in text] == []


def test_every_runs_column_is_in_its_paragraph() -> None:
    from ragas_ops.tables.format import RUNS_SCHEMA_COLUMNS

    text = (DOCS / "tables.md").read_text().split("**`runs/dt=D/<run>.<publish>.parquet`**", 1)[1]
    paragraph = text.split("\n\n", 1)[0]
    assert [name for name, _ in RUNS_SCHEMA_COLUMNS if f"`{name}`" not in paragraph] == []


def test_every_judge_comparison_column_is_in_its_table() -> None:
    rows = table_rows((DOCS / "tables.md").read_text(), "### `judge_comparison`")
    documented = [name.strip("` ") for row in rows for name in row[0].split(",")]
    assert sorted(documented) == sorted(JUDGE_COMPARISON_SCHEMA.names)


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                if linked.parent == DOCS and linked.name in PAGES_FROM_OTHER_BRANCHES:
                    continue
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and anchor not in anchors(linked.read_text()):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_readme_fits_a_few_screens() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move the detail to docs/"


def test_every_docs_page_opens_with_a_title_and_a_paragraph() -> None:
    for page in sorted(DOCS.glob("*.md")):
        title, blank, first, *_ = page.read_text().splitlines()
        assert title.startswith("# "), page
        assert blank == "", page
        assert first, page
        assert first[0] not in "#|`-", f"{page} opens with a heading, a table or code"


def test_every_docs_page_is_in_the_index_and_in_the_readme_map() -> None:
    index = (DOCS / "README.md").read_text()
    readme = README.read_text()
    names = {page.name for page in DOCS.glob("*.md")} - {"README.md"}
    assert "](docs/README.md)" in readme
    assert [
        name for name in sorted(names | PAGES_FROM_OTHER_BRANCHES) if f"]({name})" not in index
    ] == []
    assert [
        name
        for name in sorted(names | PAGES_FROM_OTHER_BRANCHES)
        if f"](docs/{name})" not in readme
    ] == []


def makefile() -> str:
    return (ROOT / "Makefile").read_text()


def test_the_readme_commands_are_makefile_targets() -> None:
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile(), flags=re.MULTILINE))
    phony = {
        name
        for line in re.findall(r"^\.PHONY:(.*)$", makefile(), flags=re.MULTILINE)
        for name in line.split()
    }
    commands = re.findall(r"`make ([a-z][\w-]*)`|^make ([a-z][\w-]*)", README.read_text(), re.M)
    named = {first or second for first, second in commands}

    assert {"demo", "test", "unit", "integration"} <= named
    assert named - (targets & phony) == set()


def test_make_unit_runs_the_unit_tests_only_and_make_test_runs_them_all() -> None:
    recipes = dict(re.findall(r"^([a-z][\w-]*):[^\n]*\n((?:\t[^\n]*\n)*)", makefile(), re.M))
    test_target = re.search(r"^test:([^#\n]*)", makefile(), re.M)

    assert re.search(r"pytest\b.*\btests/unit\b", recipes["unit"])
    assert "tests/integration" not in recipes["unit"]
    assert re.search(r"pytest\b.*\btests/integration\b", recipes["integration"])
    assert test_target is not None
    # as prerequisites, or as the targets of the sub-makes in its recipe (`$(MAKE) -j2 lint ...`)
    sub_makes = [line.split() for line in recipes["test"].splitlines() if "$(MAKE)" in line]
    runs = set(test_target.group(1).split()).union(*sub_makes)
    assert runs >= {"lint", "typecheck", "unit", "integration"}
