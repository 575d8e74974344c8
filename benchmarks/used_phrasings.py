"""Several phrasings of relevance's ``used`` decision, each a short tail after the RESPONSE:
judged on RAGBench's MS MARCO items of ``answer_reading.py``, chosen on its half A, reported on
its half B.

    python benchmarks/used_phrasings.py judge -m qwen2.5-coder-1.5b -t 2 \\
        --cache /work/runs/used-phrasings.sqlite3 --out /work/runs/used-phrasings.json
    python benchmarks/used_phrasings.py report /work/runs/used-phrasings.json

**Data.** ``answer_reading.py``'s: the first 28 usable RAGBench MS MARCO test items by the
sha256 of their id; a passage is labelled used when the response uses any of its sentences
(RAGBench's utilization keys; labels by GPT-4-class models, not people: the development sets
hold no human ``used`` label).

**Readings.** ``judged``: the product's own ``relevance.used`` call (PASSAGE, QUESTION, then
the RESPONSE and "Does the RESPONSE repeat information from the PASSAGE?"), its log-odds of
yes; its hard value under the bundled judge's cut-offs is the product now. The phrasings
(:data:`PHRASINGS`) are tails after one shared opening that closes on the RESPONSE, so a
passage and the response are read once for all of them: another wording (``used2``), another
criterion (``source``: could the response have been written from this passage) and a finer
scale (``share10``: how much of the response comes from the passage, 0 to 10, read as its
expected value).

**Rule, fixed before anything here was judged** (``binary_choice.choose``, as
``answer_reading.py``'s): halves by the sha256 of the item id; candidates: each reading
alone, ``judged`` with each phrasing, all four; each a logistic combination with a cut-off
fitted for kappa, scored by the mean kappa over 20 random halvings of A's items; fewer readings
win ties within 0.02, the product's own first. The report on B: each candidate fitted on all of
A, kappa and soft AUC with 95% bootstrap intervals over items, the product now beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_reading import SUBSET, items
from binary_choice import choose_then_report, command_line, own_reading

from localjudge import load_judge
from localjudge.judge.models.cutoffs_store import judge_cutoffs
from localjudge.metrics.asks import Ask, Decision, decide
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import (
    PASSAGE_SYSTEM,
    USED,
    USED_QUESTION,
    ask_request,
    passage_ask,
    passage_opening,
)
from localjudge.run.evaluate.grouping import ask_grouped

ITEMS = 28
OBJECTIVE = "kappa"
YES_NO = ("yes", "no")
#: name: (the tail after the RESPONSE, its decision)
PHRASINGS: dict[str, tuple[str, Decision]] = {
    "used2": (
        "Did the RESPONSE use information from the PASSAGE? Answer yes or no.",
        Decision("phrasing.used2", "used_info", YES_NO),
    ),
    "source": (
        "Could the RESPONSE have been written from this PASSAGE? Answer yes or no.",
        Decision("phrasing.source", "source", YES_NO),
    ),
    "share10": (
        "How much of the RESPONSE comes from the PASSAGE, from 0 (none of it) to 10 (all of it)?",
        Decision("phrasing.share10", "score", tuple(range(11))),
    ),
}
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    **{name: (name,) for name in PHRASINGS},
    **{f"judged+{name}": ("judged", name) for name in PHRASINGS},
    "all four": ("judged", *PHRASINGS),
}


def passage_asks(question: str, passage: str, response: str, at: int) -> list[Ask]:
    """A passage's calls: the product's ``used`` call, then each phrasing as a tail after one
    shared opening (PASSAGE, QUESTION, RESPONSE)."""
    opening = passage_opening(question, passage)
    block = delimit("RESPONSE", response)
    product = passage_ask(opening, f"{block}\n{USED_QUESTION}", USED, at=at, explain=False)
    shared = f"{opening}{block}\n"
    return [product] + [
        ask_request(PASSAGE_SYSTEM, shared, tail, decision, at=at, explain=False)
        for tail, decision in PHRASINGS.values()
    ]


def judge(args: argparse.Namespace) -> None:
    chosen = items(args.data, 2 if args.limit else ITEMS)
    if args.limit:
        chosen = [{**r, "retrieved_contexts": r["retrieved_contexts"][:2]} for r in chosen]
    judge_ = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    own = judge_cutoffs(judge_.identity)
    all_asks = [
        [
            ask
            for i, p in enumerate(item["retrieved_contexts"])
            for ask in passage_asks(item["user_input"], p, item["response"], i)
        ]
        for item in chosen
    ]
    outcomes = ask_grouped(judge_, [[a.request for a in asks] for asks in all_asks])
    rows = []
    names = ("judged", *PHRASINGS)
    for item, asks, gens in zip(chosen, all_asks, outcomes, strict=True):
        for k in range(0, len(asks), len(names)):
            at = asks[k].at
            row: dict[str, Any] = {
                "id": item["id"],
                "piece": at,
                "label": int(item["labels"]["used"][at]),
                "product": int(decide(asks[k], gens[k], own).value == "yes"),
            }
            for name, ask, gen in zip(names, asks[k:], gens[k:], strict=False):
                row[name] = own_reading(ask, gen)
            rows.append(row)
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} passages of {len(chosen)} items -> {args.out}")


def report(args: argparse.Namespace) -> None:
    rows = json.loads(args.rows.read_text("utf-8"))
    out = choose_then_report(
        rows, rows, {"used or not": rows}, CANDIDATES, _human, OBJECTIVE, "choose/used"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def _human(r: dict[str, Any]) -> int:
    return int(r["label"])


def main() -> None:
    parser, _, j, _ = command_line(__doc__, "two items, 2 passages")
    j.add_argument("--data", type=Path, default=SUBSET)
    args = parser.parse_args()
    judge(args) if args.command == "judge" else report(args)


if __name__ == "__main__":
    main()
