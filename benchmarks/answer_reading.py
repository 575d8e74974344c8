"""Position's reading with a target answer: how well a PASSAGE predicts the EXPECTED ANSWER,
beside the product's call and its question reading; chosen on half A of RAGBench's MS MARCO
items, reported on half B.

    python benchmarks/answer_reading.py judge -m qwen2.5-coder-1.5b -t 2 \\
        --cache /work/runs/answers.sqlite3 --out /work/runs/answers.json
    python benchmarks/answer_reading.py report /work/runs/answers.json

**Data.** RAGBench's MS MARCO test subset (short web passages; the other subsets' documents take
hours on two cores), the first :data:`ITEMS` usable rows by the sha256 of their id, made into
items by ``convert.py``'s ``ragbench_record``; the response is the EXPECTED ANSWER (as the
product shows it when an item has no reference); a passage is relevant when any of its
sentences is (labels by GPT-4-class models, not people).

**Readings.** ``judged`` and ``question``: the product's own ``position.relevant_answer`` call
(PASSAGE, QUESTION read, then EXPECTED ANSWER and its question) against its baseline call.
``answer``: the same prompt text with the EXPECTED ANSWER closing the shared opening, so that
its tokens are read: their mean log-probability after PASSAGE and QUESTION minus the same
after "(none)" as the passage (one baseline call per item).

**Rule, fixed before anything here was judged** (``binary_choice.choose``). Halves: the items'
ids sorted by sha256, the first half A (choice), the rest B (report). Candidates: each reading
alone, ``judged`` with each of the others, all three; each a logistic combination with a
cut-off fitted for kappa; scored by the mean kappa over 20 random halvings of A's items; fewer
readings win ties within 0.02, the product's own first. The report on B: each candidate fitted
on all of A, kappa and soft AUC with 95% bootstrap intervals over items, the product's shipped
decisions beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binary_choice import choose_then_report, closing_read_ask, command_line
from convert import _ragbench_usable, ragbench_record

from localjudge import load_judge
from localjudge.judge.models.cutoffs_store import judge_cutoffs
from localjudge.metrics.asks import Ask, decide_all
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import (
    NO_PASSAGE,
    PASSAGE_SYSTEM,
    RELEVANT_ANSWER,
    RELEVANT_TARGET_QUESTION,
    baseline_ask,
    passage_ask,
    passage_opening,
)
from localjudge.run.evaluate.grouping import ask_grouped

ITEMS = 28
SUBSET = Path(__file__).resolve().parents[2] / "shared/data/ragbench/msmarco-test.parquet"
OBJECTIVE = "kappa"
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "question": ("question",),
    "answer": ("answer",),
    "judged+question": ("judged", "question"),
    "judged+answer": ("judged", "answer"),
    "all three": ("judged", "question", "answer"),
}


def items(path: Path, n: int) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    ids = {i: f"ragbench-msmarco-{i}" for i, r in enumerate(rows) if _ragbench_usable(r)}
    order = sorted(ids, key=lambda i: hashlib.sha256(ids[i].encode()).hexdigest())
    found = [ragbench_record(rows[i], "msmarco", i) for i in order]
    return [r for r in found if r is not None][:n]


def answer_ask(question: str, passage: str, answer: str, at: int, baseline: bool) -> Ask:
    """The product's call with the EXPECTED ANSWER closing the shared opening, read."""
    return closing_read_ask(
        PASSAGE_SYSTEM,
        passage_opening(question, passage),
        "EXPECTED ANSWER",
        answer,
        RELEVANT_TARGET_QUESTION,
        RELEVANT_ANSWER,
        at=at,
        baseline=baseline,
    )


def judge(args: argparse.Namespace) -> None:
    chosen = items(args.data, 2 if args.limit else args.items)
    if args.limit:
        chosen = [{**r, "retrieved_contexts": r["retrieved_contexts"][:2]} for r in chosen]
    judge_ = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    own = judge_cutoffs(judge_.identity)
    all_asks = []
    for item in chosen:
        q, target = item["user_input"], item["response"]
        tail = f"{delimit('EXPECTED ANSWER', target)}\n{RELEVANT_TARGET_QUESTION}"
        product = [baseline_ask(q)] + [
            passage_ask(passage_opening(q, p), tail, RELEVANT_ANSWER, at=i)
            for i, p in enumerate(item["retrieved_contexts"])
        ]
        reads = [answer_ask(q, NO_PASSAGE, target, -1, baseline=True)] + [
            answer_ask(q, p, target, i, baseline=False)
            for i, p in enumerate(item["retrieved_contexts"])
        ]
        all_asks.append((product, reads))
    outcomes = ask_grouped(judge_, [[a.request for a in p + r] for p, r in all_asks])
    rows = []
    for item, (product, _), gens in zip(chosen, all_asks, outcomes, strict=True):
        answers = decide_all(product, gens[: len(product)])
        used = decide_all(product, gens[: len(product)], own)
        read_gens = gens[len(product) :]
        base = read_gens[0].reading
        for k in range(len(item["retrieved_contexts"])):
            readings = answers[k + 1].readings or {}
            reading = read_gens[k + 1].reading
            assert base is not None
            assert reading is not None
            rows.append(
                {
                    "id": item["id"],
                    "piece": k,
                    "label": int(item["labels"]["relevant"][k]),
                    "judged": readings["judged"],
                    "question": readings["question"],
                    "answer": reading.mean - base.mean,
                    "product": int(used[k + 1].value == "yes"),
                }
            )
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} passages of {len(chosen)} items -> {args.out}")


def report(args: argparse.Namespace) -> None:
    rows = json.loads(args.rows.read_text("utf-8"))
    out = choose_then_report(
        rows, rows, {"relevant or not": rows}, CANDIDATES, _human, OBJECTIVE, "choose/answer"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def _human(r: dict[str, Any]) -> int:
    return int(r["label"])


def main() -> None:
    parser, _, j, _ = command_line(__doc__, "two items, 2 passages")
    j.add_argument("--data", type=Path, default=SUBSET)
    j.add_argument("--items", type=int, default=ITEMS)
    args = parser.parse_args()
    judge(args) if args.command == "judge" else report(args)


if __name__ == "__main__":
    main()
