"""Do the intervals cover the human mean? The judge's own CI against the prediction-powered one.

    python benchmarks/quality/ppi_coverage.py RUN_DIR [RUN_DIR ...] [--n 20 50 100] [--repeats 1000]

Each RUN_DIR is a ``localjudge bench`` output directory (its ``bench_items.jsonl`` gives each
judge's score and the human-derived score per item; ``judges/*/results.jsonl`` the soft scores).
For every judge x metric x labelled size n, the items are split ``--repeats`` times (seeded) into
n "labelled" items and the rest; on each split the script computes

- ``naive``: the judge's mean over the rest with the interval ``summary.json`` reports (the
  seeded percentile bootstrap of :mod:`localjudge.stats.bootstrap`);
- ``ppi``: :func:`localjudge.stats.ppi.ppi_mean` from the n labelled pairs and the rest's judge
scores,
  from the hard scores and from the soft ones: its population interval ``ci95`` and its interval
  for exactly the rest's items, ``data_ci95``;

and counts how often each interval holds the human mean of the rest. It prints coverage and the
mean interval width. A size is skipped when fewer than 10 items would be left.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from localjudge.stats.bootstrap import mean_interval
from localjudge.stats.ppi import ppi_mean

SEED = 0
#: the intervals compared, as the table's columns name them
KINDS = ("naive", "ppi hard", "ppi hard data", "ppi soft", "ppi soft data")


def load(run: Path) -> dict[tuple[str, str], list[tuple[float, float, float | None]]]:
    """(judge, metric) -> [(human, hard, soft)] over the items with both scores."""
    soft: dict[tuple[str, str, int], float | None] = {}
    for results in sorted((run / "judges").glob("*/results.jsonl")):
        name = results.parent.name.split("-", 1)[1]
        for line in results.read_text("utf-8").splitlines():
            row = json.loads(line)
            soft[(name, row["metric"], int(row["index"]))] = row.get("soft_score")
    out: dict[tuple[str, str], list[tuple[float, float, float | None]]] = defaultdict(list)
    for line in (run / "bench_items.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["human_score"] is None or row["judge_score"] is None:
            continue
        key = (row["judge"], row["metric"])
        s = soft.get((row["judge"], row["metric"], int(row["index"])))
        out[key].append((float(row["human_score"]), float(row["judge_score"]), s))
    return out


def coverage(
    pairs: list[tuple[float, float, float | None]], n: int, repeats: int
) -> dict[str, tuple[float, float]]:
    """Per interval kind: (coverage, mean width) over ``repeats`` seeded splits."""
    human = np.asarray([p[0] for p in pairs])
    hard = np.asarray([p[1] for p in pairs])
    has_soft = all(p[2] is not None for p in pairs)
    soft = np.asarray([p[2] for p in pairs], dtype=float) if has_soft else None
    rng = np.random.default_rng(SEED)
    hits: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for _ in range(repeats):
        order = rng.permutation(len(pairs))
        lab, rest = order[:n], order[n:]
        truth = human[rest].mean()
        naive = mean_interval(hard[rest].tolist())
        if naive is not None:
            hits["naive"].append((naive[0] <= truth <= naive[1], naive[1] - naive[0]))
        for kind, f in (("ppi hard", hard), ("ppi soft", soft)):
            if f is None:
                continue
            est = ppi_mean(human[lab], f[lab], f[rest])
            if est is not None:
                for suffix, (lo, hi) in (("", est.ci95), (" data", est.data_ci95)):
                    hits[kind + suffix].append((lo <= truth <= hi, hi - lo))
    return {
        kind: (float(np.mean([h for h, _ in v])), float(np.mean([w for _, w in v])))
        for kind, v in hits.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--n", type=int, nargs="+", default=[20, 50, 100])
    parser.add_argument("--repeats", type=int, default=1000)
    args = parser.parse_args(argv)
    header = f"{'set':<16} {'judge':<14} {'metric':<10} {'N':>4} {'n':>4}  " + "  ".join(
        f"{k:>17}" for k in KINDS
    )
    print(f"# {args.repeats} seeded splits; nominal coverage 0.95")
    print(header)
    print("-" * len(header))
    for run in args.runs:
        for (judge, metric), pairs in sorted(load(run).items()):
            for n in args.n:
                if len(pairs) - n < 10:
                    continue
                cov = coverage(pairs, n, args.repeats)
                cells: list[str] = []
                for kind in KINDS:
                    c: Any = cov.get(kind)
                    cells.append(f"{c[0]:>8.3f}/{c[1]:<8.3f}" if c else f"{'-':>17}")
                print(
                    f"{run.name:<16} {judge:<14} {metric:<10} {len(pairs):>4} {n:>4}  "
                    + "  ".join(cells)
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
