"""Recall's analogue of the question reading: how well the CONTEXT predicts a STATEMENT, beside
the product's yes/no call; chosen on half A of the WiCE claims, reported on half B.

    python benchmarks/convert.py wice --limit 150 -o /work/runs/dev
    python benchmarks/statement_reading.py judge /work/runs/dev/wice.jsonl \\
        -m qwen2.5-coder-1.5b -t 2 --cache /work/runs/statements.sqlite3 \\
        --out /work/runs/statements.json
    python benchmarks/statement_reading.py report /work/runs/statements.json

**Readings.** Every statement is asked as the product asks it (its instructions, the item's
CONTEXT passages, the STATEMENT, the question "Do the CONTEXT passages support every part of the
STATEMENT?"), with the STATEMENT at the end of the shared opening so that the judge reads its
tokens: ``judged`` is the call's log-odds of yes, ``statement`` the mean log-probability of the
STATEMENT's tokens after the passages minus the same after "(none)" as the only passage (one
baseline call per statement). The prompt's text is the product's; only where the engine cuts
it for reuse differs (the product shares the passages among an item's statements).

**Rule, fixed before anything here was judged** (:func:`choose`). Halves: the items' ids sorted
by sha256, the first half A (choice), the rest B (report). Decisions: statements of claims
labelled supported (1) or not supported (0); partially supported claims are left out of the
choice. Candidates: ``judged`` alone (the product), ``statement`` alone, both (a logistic
combination, ``stats/combination_fit.py``), each followed by a cut-off fitted for balanced
accuracy; scored by the mean balanced accuracy over 20 random halvings of A's claims (fit on
one, measure on the other); the best wins, fewer readings win ties within :data:`TIE` (the
product's own first). The report on B: each candidate fitted on all of A, soft AUC and balanced
accuracy with 95% bootstrap intervals over claims; beside it the same for supported against
partially + not supported (fitted on A under that split).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_combinations import halves

from localjudge import load_judge
from localjudge.judge.models.cutoffs_store import judge_cutoffs
from localjudge.metrics.asks import Ask, decide
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import (
    NO_PASSAGE,
    RECALL_QUESTION,
    RECALL_SYSTEM,
    SUPPORTED,
    ask_request,
    contexts_opening,
)
from localjudge.metrics.statements import split_statements
from localjudge.run.grouping import ask_grouped
from localjudge.stats.cutoffs_fit import Observation, agreement, fit, hard

TIE = 0.02
SPLITS = 20
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "statement": ("statement",),
    "judged+statement": ("judged", "statement"),
}
_OPEN, _CLOSE = "<<STATEMENT>>\n", "\n<</STATEMENT>>"


def statement_ask(contexts: list[str], statement: str, at: int, baseline: bool) -> Ask:
    """The product's recall call with the STATEMENT closing the shared opening, read."""
    shared = f"{contexts_opening(contexts)}{delimit('STATEMENT', statement)}\n"
    read = (shared.rindex(_OPEN) + len(_OPEN), shared.rindex(_CLOSE))
    return ask_request(
        RECALL_SYSTEM,
        shared,
        RECALL_QUESTION,
        SUPPORTED,
        at=at,
        explain=False,
        read=read,
        baseline=baseline,
    )


def judge(args: argparse.Namespace) -> None:
    items = [json.loads(x) for x in args.items.read_text("utf-8").splitlines() if x.strip()]
    if args.limit:
        items = items[:2]
    judge_ = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    own = judge_cutoffs(judge_.identity)
    all_asks = []
    for item in items:
        asks = []
        for i, s in enumerate(split_statements(item["reference"])):
            asks.append(statement_ask(item["retrieved_contexts"], s, i, baseline=False))
            asks.append(statement_ask([NO_PASSAGE], s, i, baseline=True))
        all_asks.append(asks)
    outcomes = ask_grouped(judge_, [[a.request for a in asks] for asks in all_asks])
    rows = []
    for item, asks, gens in zip(items, all_asks, outcomes, strict=True):
        for k in range(0, len(asks), 2):
            ask, gen, base = asks[k], gens[k], gens[k + 1]
            answer = decide(ask, gen)
            assert answer.soft is not None
            assert gen.reading
            assert base.reading
            p = min(max(answer.soft, 1e-12), 1 - 1e-12)
            rows.append(
                {
                    "id": item["id"],
                    "at": ask.at,
                    "label": item["labels"]["recall"],
                    "judged": float(np.clip(np.log(p / (1 - p)), -10, 10)),
                    "statement": gen.reading.mean - base.reading.mean,
                    "product": int(decide(ask, gen, own).value == "yes"),
                }
            )
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} statements of {len(items)} claims -> {args.out}")


# --------------------------------------------------------------------------- choosing


def _fitted(train: list[dict[str, Any]], names: tuple[str, ...], positive: float) -> Any:
    """The combination of ``names`` and its cut-off, fitted on ``train`` (label >= positive is
    1); a function from rows to their observations and hard values."""
    from localjudge.stats.combination_fit import Reads, combined_soft, fit_combination

    def reads(rows: list[dict[str, Any]]) -> list[Reads]:
        return [Reads(r["id"], {n: r[n] for n in names}, int(r["label"] >= positive)) for r in rows]

    combination = fit_combination(reads(train), names, graded=False)

    def observed(rows: list[dict[str, Any]]) -> list[Observation]:
        rs = reads(rows)
        soft = combined_soft(combination, rs, graded=False)
        return [Observation(o.group, s, o.human) for o, s in zip(rs, soft, strict=True)]

    cut = fit(observed(train), graded=False, objective="balanced_accuracy")

    def apply(rows: list[dict[str, Any]]) -> tuple[list[Observation], list[int]]:
        obs = observed(rows)
        return obs, hard(obs, cut, graded=False)

    return apply


def choose(rows_a: list[dict[str, Any]]) -> dict[str, float]:
    """Each candidate's mean held-out balanced accuracy over the halvings of A's claims."""
    from localjudge.stats.cutoffs_fit import _balanced_accuracy

    ids = sorted({r["id"] for r in rows_a})
    rng = random.Random("choose/recall")
    scores: dict[str, list[float]] = defaultdict(list)
    for _ in range(SPLITS):
        shuffled = ids[:]
        rng.shuffle(shuffled)
        one = set(shuffled[: len(shuffled) // 2])
        for part in (one, set(ids) - one):
            train = [r for r in rows_a if r["id"] in part]
            test = [r for r in rows_a if r["id"] not in part]
            for name, names in CANDIDATES.items():
                obs, judged = _fitted(train, names, 1.0)(test)
                value = _balanced_accuracy(np.asarray([o.human for o in obs]), np.asarray(judged))
                scores[name].append(value if value is not None else 0.5)
    return {n: float(np.mean(v)) for n, v in scores.items()}


def _shown(found: dict[str, Any], auc: dict[str, Any]) -> str:
    def one(f: dict[str, Any]) -> str:
        ci = f.get("ci95")
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        return f"{f['value']:.3f}{interval}"

    shares = found["judge_shares"][1]
    return (
        f"soft AUC {one(auc)}; balanced accuracy {one(found['balanced_accuracy'])}; "
        f"judge yes {shares:.2f}"
    )


def report(args: argparse.Namespace) -> None:
    rows = json.loads(args.rows.read_text("utf-8"))
    a, _ = halves(sorted({r["id"] for r in rows}))
    sure = [r for r in rows if r["label"] in (0.0, 1.0)]
    a_sure = [r for r in sure if r["id"] in a]
    means = choose(a_sure)
    best = max(means.values())
    chosen = min(
        (c for c in CANDIDATES if means[c] >= best - TIE), key=lambda c: len(CANDIDATES[c])
    )
    print(f"choice on A ({len(a_sure)} statements, {len({r['id'] for r in a_sure})} claims):")
    for c, m in means.items():
        print(f"  {c:18s} mean balanced accuracy {m:.3f}")
    print(f"  chosen: {chosen}")
    out: dict[str, Any] = {"choice": means, "chosen": chosen}
    for label, positive, pool in (
        ("supported vs not", 1.0, sure),
        ("supported vs partially + not", 1.0, rows),
    ):
        train = [r for r in pool if r["id"] in a]
        test = [r for r in pool if r["id"] not in a]
        print(
            f"report on B, {label} ({len(test)} statements, {len({r['id'] for r in test})} claims):"
        )
        for name, names in CANDIDATES.items():
            obs, judged = _fitted(train, names, positive)(test)
            shifted = [
                Observation(o.group, float(j), o.human) for o, j in zip(obs, judged, strict=True)
            ]
            found = agreement(shifted, (0.5,), graded=False)
            auc = agreement(obs, None, graded=False)["auc"]
            print(f"  {name:18s} {_shown(found, auc)}")
            out.setdefault(label, {})[name] = {"hard": found, "auc": auc}
        shipped = [
            Observation(r["id"], float(r["product"]), int(r["label"] >= positive)) for r in test
        ]
        found = agreement(shipped, (0.5,), graded=False)
        print(f"  {'the product now':18s} {_shown(found, auc=out[label]['judged']['auc'])}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge")
    j.add_argument("items", type=Path)
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    j.add_argument("--cache", default=None)
    j.add_argument("--out", type=Path, required=True)
    j.add_argument("--limit", action="store_true", help="a smoke test: two claims")
    r = sub.add_parser("report")
    r.add_argument("rows", type=Path)
    r.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    judge(args) if args.command == "judge" else report(args)


if __name__ == "__main__":
    main()
