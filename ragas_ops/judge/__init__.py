"""Judges: what answers the metrics' prompts. See `base.Judge` for the interface."""
