"""Scoring tables of interactions: one scorer, used by the CLI's file job and the DAG."""
