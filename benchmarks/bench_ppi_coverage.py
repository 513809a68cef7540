"""Does the PPI interval of the corrected mean cover the human-scale mean as often as it says?

Simulated days (`ragas_ops_testing.ppi_simulation`): 2,000 scored rows whose human-scale mean is
known (0.65), a judge that adds a bias of +0.12 and N(0, 0.15) noise (clipped to [0, 1]), and
n = 20, 50 and 200 uniformly sampled labels. For each n, over `--reps` days: how often the 95%
interval held the truth (with its Monte Carlo standard error), its median width and the mean
estimate, for PPI++ (`ragas_ops.labels.ppi.ppi_mean`), the labels alone and the judge alone.

Usage: python benchmarks/bench_ppi_coverage.py [--reps 2000] [--rows 2000]
"""

from __future__ import annotations

import argparse
import time

from ragas_ops_testing.ppi_simulation import ESTIMATORS, TRUE_MEAN, BiasedJudge, simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--labels", type=int, nargs="+", default=[20, 50, 200])
    args = parser.parse_args()
    judge = BiasedJudge()
    print(
        f"true mean {TRUE_MEAN:.3f}; judge bias +{judge.bias} noise sd {judge.noise}; "
        f"{args.rows} rows; {args.reps} repetitions per n"
    )
    print(f"{'n':>5} {'estimator':<12} {'coverage':>9} {'+-MC se':>8} {'width':>7} {'mean':>7}")
    for labels in args.labels:
        started = time.perf_counter()
        coverage = simulate(labels, rows=args.rows, reps=args.reps, judge=judge)
        for name in ESTIMATORS:
            print(
                f"{labels:>5} {name:<12} {coverage.rate(name):>9.3f} "
                f"{coverage.monte_carlo_error():>8.3f} {coverage.median_width(name):>7.3f} "
                f"{coverage.mean_estimate(name):>7.3f}"
            )
        print(f"      ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
