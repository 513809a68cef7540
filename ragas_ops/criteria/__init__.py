"""A team's own criteria, written in the config file (`[criteria.<name>]`): `spec` reads and
versions them. Each one is scored as a metric by `ragas_ops.metrics.criteria` (docs/criteria.md).
"""
