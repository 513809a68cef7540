"""Benchmarks of the metrics against human judgements: WikiEval (the paper's Table 1) and BEGIN."""
