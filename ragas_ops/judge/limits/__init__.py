"""Pacing and money: the account's rate limits, a run's budget, which row goes first, and the
budget shared by every process of a deployment (a local file or Redis)."""
