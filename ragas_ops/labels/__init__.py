"""Scores anchored to people: a few blind human labels a day, the judge-human agreement, and
the daily means corrected with prediction-powered inference (see docs/labels.md).

`ppi` is the estimator, `agreement` the judge-human agreement, `spec` the `[labels]` settings.
"""
