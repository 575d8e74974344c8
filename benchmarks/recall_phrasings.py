"""Several phrasings of recall's support decision, each a short tail after the STATEMENT: judged
on the WiCE claims of ``statement_reading.py``, chosen on its half A, reported on its half B.

    python benchmarks/recall_phrasings.py judge /work/runs/dev/wice.jsonl \\
        -m qwen2.5-coder-1.5b -t 2 --cache /work/runs/recall-phrasings.sqlite3 \\
        --out /work/runs/recall-phrasings.json
    python benchmarks/recall_phrasings.py report /work/runs/recall-phrasings.json \\
        --statements /work/runs/statements.json

**Phrasings** (:data:`PHRASINGS`), each after the product's recall instructions
(:data:`~localjudge.metrics.instructions.RECALL_SYSTEM`), the item's CONTEXT passages and the
STATEMENT as one shared opening, so a statement is read once for all of them: another wording
(``stated``), another criterion (``confirm``: could a reader of the passages alone confirm
it), a criterion asked apart (``topic``: do the passages talk about what the STATEMENT is
about) and a finer scale (``scale10``: how much of it they support, 0 to 10, read as its
expected value). Each gives one reading: a yes/no phrasing's log-odds, ``scale10`` its
expected value. ``statement_reading.py``'s rows give the product's own readings of the same
statements: ``judged`` (the product's call) and ``statement`` (the STATEMENT reading).

**Rule, fixed before anything here was judged** (``binary_choice.choose``, as
``statement_reading.py``'s): halves by the sha256 of the item id; decisions: statements of
claims labelled supported (1) or not supported (0). Candidates: every reading alone, all six
together, and ``judged+statement`` (that module's choice); each a logistic combination with a
cut-off fitted for balanced accuracy, scored by the mean over 20 random halvings of A's claims;
the best wins, fewer readings win ties within 0.02 (the product's own first). The report on B:
each candidate fitted on all of A, soft AUC and balanced accuracy with 95% bootstrap intervals
over claims, beside the product's hard values; and the same for supported against partially +
not supported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binary_choice import choose_then_report, command_line, own_reading

from localjudge import load_judge
from localjudge.metrics.asks import Ask, Decision
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import RECALL_SYSTEM, ask_request, contexts_opening
from localjudge.metrics.statements import split_statements
from localjudge.run.evaluate.grouping import ask_grouped

OBJECTIVE = "balanced_accuracy"
YES_NO = ("yes", "no")
#: name: (the tail after the STATEMENT, its decision)
PHRASINGS: dict[str, tuple[str, Decision]] = {
    "stated": (
        "Is every part of the STATEMENT stated in the CONTEXT passages? Answer yes or no.",
        Decision("phrasing.stated", "stated", YES_NO),
    ),
    "confirm": (
        "Could someone who reads only the CONTEXT passages confirm that the STATEMENT is true? "
        "Answer yes or no.",
        Decision("phrasing.confirm", "confirmed", YES_NO),
    ),
    "topic": (
        "Do the CONTEXT passages talk about what the STATEMENT is about? Answer yes or no.",
        Decision("phrasing.topic", "on_topic", YES_NO),
    ),
    "scale10": (
        "How much of the STATEMENT do the CONTEXT passages support, from 0 (none of it) to 10 "
        "(all of it)?",
        Decision("phrasing.scale10", "score", tuple(range(11))),
    ),
}
READS = ("judged", "statement", *PHRASINGS)
CANDIDATES: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in READS},
    "judged+statement": ("judged", "statement"),
    "all six": READS,
}


def phrasing_asks(contexts: list[str], statement: str, at: int) -> list[Ask]:
    """A statement's phrasings: each a tail after one shared opening (the CONTEXT passages and
    the STATEMENT)."""
    shared = f"{contexts_opening(contexts)}{delimit('STATEMENT', statement)}\n"
    return [
        ask_request(RECALL_SYSTEM, shared, tail, decision, at=at, explain=False)
        for tail, decision in PHRASINGS.values()
    ]


def judge(args: argparse.Namespace) -> None:
    items = [json.loads(x) for x in args.items.read_text("utf-8").splitlines() if x.strip()]
    if args.limit:
        items = items[:2]
    judge_ = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    all_asks = [
        [
            ask
            for i, s in enumerate(split_statements(item["reference"]))
            for ask in phrasing_asks(item["retrieved_contexts"], s, i)
        ]
        for item in items
    ]
    outcomes = ask_grouped(judge_, [[a.request for a in asks] for asks in all_asks])
    rows = []
    for item, asks, gens in zip(items, all_asks, outcomes, strict=True):
        for k in range(0, len(asks), len(PHRASINGS)):
            row: dict[str, Any] = {"id": item["id"], "at": asks[k].at}
            for name, ask, gen in zip(PHRASINGS, asks[k:], gens[k:], strict=False):
                row[name] = own_reading(ask, gen)
            rows.append(row)
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} statements of {len(items)} claims -> {args.out}")


def merged(
    phrasings: list[dict[str, Any]], statements: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``statement_reading.py``'s rows with each statement's phrasings beside them."""
    found = {(r["id"], r["at"]): r for r in phrasings}
    return [{**r, **found[(r["id"], r["at"])]} for r in statements if (r["id"], r["at"]) in found]


def report(args: argparse.Namespace) -> None:
    rows = merged(
        json.loads(args.rows.read_text("utf-8")), json.loads(args.statements.read_text("utf-8"))
    )
    sure = [r for r in rows if r["label"] in (0.0, 1.0)]
    pools = {"supported vs not": sure, "supported vs partially + not": rows}
    out = choose_then_report(
        rows, sure, pools, CANDIDATES, _human, OBJECTIVE, "choose/recall-phrasings"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def _human(r: dict[str, Any]) -> int:
    return int(r["label"] >= 1.0)


def main() -> None:
    parser, _, j, r = command_line(__doc__, "two claims")
    j.add_argument("items", type=Path)
    r.add_argument("--statements", type=Path, required=True)
    args = parser.parse_args()
    judge(args) if args.command == "judge" else report(args)


if __name__ == "__main__":
    main()
