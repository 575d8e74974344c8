"""Do verdicts follow content, not position? Each item judged as given and in reverse order.

    python benchmarks/robustness/order.py DATA [-m MODEL] [--metric M ...] [--limit N]
        [--no-reasons] [--cache FILE] [-t THREADS]

DATA is a labelled (or plain) JSONL file. Every item is scored twice: as given, and with its
retrieved contexts in reverse order and, for recall, its reference's sentences in reverse order
(an item whose reversed reference does not split back into the same sentences keeps its order
for recall). Each decision of the reversed run is matched to the same context or statement of
the run as given. Per metric it prints:

- ``same``: the share of decisions that are the same in both orders (1.0 for a judge that reads
  content only);
- ``yes@first`` / ``yes@last``: the yes-rate of the decision about whatever stands first and last
  in the item, over both runs (a judge that favours a position shows it here, whatever the
  passages say);

One decision per call: a position or relevance call shows one passage alone, the same prompt in
either order (``same`` below 1.0 there comes from how the engine batched the calls, not from
what the judge read); a recall call shows one statement with every context, in the item's order.
- ``items same``: the share of items whose whole verdict vector is the same.

With ``--cache`` (e.g. the cache of a ``bench`` run over the same data), the run as given is
answered from it. A figure to improve, not a pass/fail test; run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from localjudge import evaluate, load_judge
from localjudge.metrics import METRICS
from localjudge.metrics.statements import split_statements
from localjudge.run.settings import MetricSettings, build_metrics

#: the decisions that count as yes (each metric's first decision key: relevance's level)
YES = {"recall": {1}, "position": {True}, "relevance": {"high", "medium"}}


def reversed_item(record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The item with its contexts (and, where it splits back the same, its reference's
    statements) in reverse order; and whether the statements were reversed."""
    out = {**record, "retrieved_contexts": list(reversed(record["retrieved_contexts"]))}
    reference = record.get("reference")
    if not reference:
        return out, False
    statements = split_statements(reference)
    flipped = " ".join(reversed(statements))
    if len(statements) > 1 and split_statements(flipped) == list(reversed(statements)):
        out["reference"] = flipped
        return out, True
    return out, False


def decisions(metric: str, result: Any) -> list[Any]:
    key = METRICS[metric].decisions[0]
    return [v[key] for v in result.verdicts]


def compare(
    metric: str, given: list[Any], flipped: list[Any], statements_flipped: bool
) -> dict[str, int]:
    """Counts for one item: ``flipped`` is in reverse order of ``given`` for contexts (and for
    recall statements only when they were reversed)."""
    back = list(reversed(flipped)) if metric != "recall" or statements_flipped else flipped
    n = len(given)
    return {
        "pieces": n,
        "same": sum(a == b for a, b in zip(given, back, strict=True)),
        "first_yes": (given[0] in YES[metric]) + (flipped[0] in YES[metric]),
        "last_yes": (given[-1] in YES[metric]) + (flipped[-1] in YES[metric]),
        "items_same": int(given == back),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--metric", action="append", choices=sorted(METRICS))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--no-reasons", action="store_true")
    parser.add_argument("--cache", default=None, help="judge-call cache (default: none)")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    records = [json.loads(line) for line in args.data.open(encoding="utf-8") if line.strip()]
    records = [{k: v for k, v in r.items() if k != "labels"} for r in records[: args.limit or None]]
    names = args.metric or ["recall", "position", "relevance"]
    names = [m for m in names if all(f in records[0] for f in METRICS[m].required)]
    flipped_records, reversed_statements = [], {}
    for r in records:
        item, done = reversed_item(r)
        flipped_records.append(item)
        reversed_statements[r["id"]] = done

    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or False)
    metrics = build_metrics(names, MetricSettings(reasons=not args.no_reasons))
    runs = [
        {(r.id, r.metric): r.result for r in evaluate(data, metrics, judge) if r.result}
        for data in (records, flipped_records)
    ]
    tally: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (item_id, metric), result in runs[0].items():
        other = runs[1].get((item_id, metric))
        if other is None or len(other.verdicts) != len(result.verdicts) or not result.verdicts:
            continue
        counts = compare(
            metric,
            decisions(metric, result),
            decisions(metric, other),
            reversed_statements[item_id],
        )
        tally[metric]["items"] += 1
        for key, value in counts.items():
            tally[metric][key] += value

    figures = {}
    reasons = "off" if args.no_reasons else "on"
    print(f"# {args.data.name}, judge {judge.identity.model}, reasons {reasons}")
    print(f"{'metric':10} {'items':>6} {'pieces':>7} {'same':>6} {'items same':>10} "
          f"{'yes@first':>9} {'yes@last':>8}")  # fmt: skip
    for metric in names:
        t = tally.get(metric)
        if not t:
            continue
        row = {
            "items": t["items"],
            "pieces": t["pieces"],
            "same": t["same"] / t["pieces"],
            "items_same": t["items_same"] / t["items"],
            "yes_first": t["first_yes"] / (2 * t["items"]),
            "yes_last": t["last_yes"] / (2 * t["items"]),
        }
        figures[metric] = row
        print(
            f"{metric:10} {row['items']:6d} {row['pieces']:7d} {row['same']:6.3f} "
            f"{row['items_same']:10.3f} {row['yes_first']:9.3f} {row['yes_last']:8.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
