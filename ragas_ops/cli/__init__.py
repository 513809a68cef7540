"""The `ragas-ops` command line."""

from ragas_ops.cli.main import main

__all__ = ["main"]
