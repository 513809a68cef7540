"""The README's configuration example is a valid config file: every key in it is a setting."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ragas_ops.config import Settings, load_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_config_example_loads(tmp_path: Path) -> None:
    (example,) = re.findall(r"```toml\n(.*?)```", README.read_text(), flags=re.DOTALL)
    config = tmp_path / "ragas-ops.toml"
    config.write_text(example)

    settings = load_settings(config, environ={})

    assert settings.columns.question == "query"
    assert settings.pipeline.segments == ("app", "model_version")
    assert settings.prices["gpt-4o-mini"].cached_input_per_million == 0.075


def test_every_setting_is_documented_in_the_readme() -> None:
    text = "\n".join(
        [README.read_text(), *(doc.read_text() for doc in sorted(README.parent.glob("docs/*.md")))]
    )
    settings = Settings()
    missing = [
        f"{section}.{item.name}"
        for section in ("judge", "metrics", "columns", "size_budget", "pipeline")
        for item in dataclasses.fields(getattr(settings, section))
        if f"`{item.name}`" not in text and f"\n{item.name} = " not in text
    ]
    assert not missing, f"settings the README does not explain: {missing}"
