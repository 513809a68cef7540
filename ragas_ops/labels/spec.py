"""The labelling settings (`LabelsSpec`), the `[labels]` section of the config file. A settings
module: it imports nothing of ragas_ops but the settings toolkit."""

from __future__ import annotations

from dataclasses import dataclass

from ragas_ops.settings_fields import at_least_one, setting


@dataclass
class LabelsSpec:
    """How many rows people are asked to label, and how far back their labels count."""

    per_day: int = setting(20, minimum=0)
    """Rows of each scored day put up for labelling (a sample by a hash of the row id,
    stratified by `pipeline.segments`); 0: no labelling queue."""
    window_days: int = at_least_one(28)
    """Days of labels (the scored day and the ones before it) behind a day's agreement and
    corrected means: labels are few, so they are pooled."""
