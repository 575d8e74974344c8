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

**Rule, fixed before anything here was judged** (``binary_choice.choose``). Halves: the items'
ids sorted by sha256, the first half A (choice), the rest B (report). Decisions: statements of
claims labelled supported (1) or not supported (0); partially supported claims are left out of
the choice. Candidates: ``judged`` alone (the product), ``statement`` alone, both (a logistic
combination, ``stats/combination_fit.py``), each followed by a cut-off fitted for balanced
accuracy; scored by the mean balanced accuracy over 20 random halvings of A's claims (fit on
one, measure on the other); the best wins, fewer readings win ties within 0.02 (the product's
own first). The report on B: each candidate fitted on all of A, soft AUC and balanced accuracy
with 95% bootstrap intervals over claims; beside it the same for supported against partially +
not supported (fitted on A under that split).

**Confirmation on the rest of WiCE dev, fixed before any of it was judged** (``rest`` and
``confirm``). After A chose both readings and B agreed without clearing the storing rule, the
199 of WiCE dev's 349 claims not among the 150 above are fresh: ``rest`` writes one item per such
claim (its evidence chunk 0). None of them is labelled not supported (the 150 hold all 43 such
claims), so the test is supported (1) against partially supported (0.5, counted as 0), the
product's own question ("every part of the STATEMENT"). The candidates are fitted on all 150
earlier claims (supported against partially + not, the test's split) and measured on the fresh
claims: soft AUC and balanced accuracy with 95% bootstrap intervals over claims, and the paired
differences ``judged+statement`` minus ``judged`` (both refitted) with the same intervals.
**Rule:** the statement reading goes into the bundled judge's recall when the paired soft-AUC
difference's lower bound is above 0 (soft AUC: the fresh claims carry no label the product's
cut-off was fitted for); the balanced-accuracy difference is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binary_choice import choose_then_report, closing_read_ask, command_line, paired
from binary_choice import report as binary_report

from localjudge import load_judge
from localjudge.judge.models.cutoffs_store import judge_cutoffs
from localjudge.metrics.asks import Ask, decide, readings
from localjudge.metrics.instructions import (
    NO_PASSAGE,
    RECALL_QUESTION,
    RECALL_SYSTEM,
    SUPPORTED,
    contexts_opening,
)
from localjudge.metrics.statements import split_statements
from localjudge.run.evaluate.grouping import ask_grouped

OBJECTIVE = "balanced_accuracy"
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "statement": ("statement",),
    "judged+statement": ("judged", "statement"),
}


def statement_ask(contexts: list[str], statement: str, at: int, baseline: bool) -> Ask:
    """The product's recall call with the STATEMENT closing the shared opening, read."""
    return closing_read_ask(
        RECALL_SYSTEM,
        contexts_opening(contexts),
        "STATEMENT",
        statement,
        RECALL_QUESTION,
        SUPPORTED,
        at=at,
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
            rows.append(
                {
                    "id": item["id"],
                    "at": ask.at,
                    "label": item["labels"]["recall"],
                    "judged": readings(SUPPORTED, answer.soft, None, None)["judged"],
                    "statement": gen.reading.mean - base.reading.mean,
                    "product": int(decide(ask, gen, own).value == "yes"),
                }
            )
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} statements of {len(items)} claims -> {args.out}")


# --------------------------------------------------------------------------- choosing


def _human(r: dict[str, Any]) -> int:
    return int(r["label"] >= 1.0)


def report(args: argparse.Namespace) -> None:
    rows = json.loads(args.rows.read_text("utf-8"))
    sure = [r for r in rows if r["label"] in (0.0, 1.0)]
    pools = {"supported vs not": sure, "supported vs partially + not": rows}
    out = choose_then_report(rows, sure, pools, CANDIDATES, _human, OBJECTIVE, "choose/recall")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def rest(args: argparse.Namespace) -> None:
    """One item per claim of ``every`` (``convert.py wice --limit 0``) not among ``judged``'s:
    its evidence chunk 0."""
    old = {
        json.loads(x)["source"]["claim_id"]
        for x in args.judged.read_text("utf-8").splitlines()
        if x.strip()
    }
    every = [json.loads(x) for x in args.every.read_text("utf-8").splitlines() if x.strip()]
    fresh = [r for r in every if r["source"]["claim_id"] not in old and r["source"]["chunk"] == 0]
    args.out.write_text("".join(json.dumps(r) + "\n" for r in fresh), "utf-8")
    print(f"{len(fresh)} fresh claims -> {args.out}")


def confirm(args: argparse.Namespace) -> None:
    """The rule of the module's "Confirmation" paragraph: fit on ``earlier``, measure on
    ``fresh``."""
    train, test = (json.loads(p.read_text("utf-8")) for p in (args.earlier, args.fresh))
    assert not {r["id"] for r in train} & {r["id"] for r in test}

    n = len({r["id"] for r in test})
    print(f"fresh claims, supported vs partially ({len(test)} statements, {n} claims):")
    out: dict[str, Any] = {"figures": binary_report(train, test, CANDIDATES, _human, OBJECTIVE)}
    both, judged = CANDIDATES["judged+statement"], CANDIDATES["judged"]
    out["paired"] = p = paired(train, test, both, judged, _human, OBJECTIVE)
    for name, f in p.items():
        print(f"  judged+statement minus judged, {name}: {f['value']:+.3f} {f['ci95']}")
    ci = p["auc"]["ci95"]
    out["ships"] = bool(ci and ci[0] > 0.0)
    print(f"  the rule (soft AUC difference's lower bound above 0): ships = {out['ships']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def main() -> None:
    parser, sub, j, _ = command_line(__doc__, "two claims")
    j.add_argument("items", type=Path)
    w = sub.add_parser("rest", help="the claims not judged yet, one item each")
    w.add_argument("every", type=Path)
    w.add_argument("judged", type=Path)
    w.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("confirm", help="fit on the earlier rows, measure on the fresh ones")
    c.add_argument("earlier", type=Path)
    c.add_argument("fresh", type=Path)
    c.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    {"judge": judge, "report": report, "rest": rest, "confirm": confirm}[args.command](args)


if __name__ == "__main__":
    main()
