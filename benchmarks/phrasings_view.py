"""Two more ways to ask a passage's decision, judged on the development lists for
``phrasings.py report`` (which chooses on half A and reports on half B, under its rule): the
passage graded with its list in view, and worked examples in the instructions.

    python benchmarks/phrasings_view.py /work/runs/dev/llmjudge.jsonl -m qwen2.5-coder-1.5b \\
        -t 2 --cache /work/runs/phrasings.sqlite3 --half A --out /work/runs/view-A.json
    python benchmarks/phrasings.py report --rows /work/runs/rows-new.json \\
        --phrasings /work/runs/phrasings-A.json /work/runs/view-A.json

**The list in view** (``list_relevant``, ``list_grade``): a query's passages in lists of
:data:`LIST_SIZE`, in the order of their text's sha256 (an order that does not depend on the
retrieval order), the whole list then the QUESTION read once as the shared opening, each
decision a short tail naming its passage by number: position's yes/no and the grade, worded as
the product words them. A passage's own call never sees another passage; these do.

**Worked examples** (``demo_position``, ``demo_grade``, ``demo_question``): the product's
passage instructions with :data:`EXAMPLES` appended (written for this script, one per grade,
in the order 2, 0, 3, 1, none from any data set), then the product's own layout and tails, and
its question reading against a baseline under the same instructions. The examples sit in the
system text, which the judge evaluates once and stores, so they cost nothing per call; a
passage is read again under them (that is this script's cost, not a product's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_combinations import by_query, halves

from localjudge import load_judge
from localjudge.metrics.asks import Ask, Decision, decide_all
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import (
    GRADE,
    GRADE_QUESTION,
    NO_PASSAGE,
    PASSAGE_SYSTEM,
    RELEVANT,
    RELEVANT_QUESTION,
    ask_request,
    delimit_question,
    passage_opening,
    question_span,
)
from localjudge.run.evaluate.grouping import ask_grouped

LIST_SIZE = 5
#: the passage instructions, for a numbered list of passages
LIST_SYSTEM = PASSAGE_SYSTEM.replace(
    "You judge one PASSAGE that a search system retrieved",
    "You judge numbered PASSAGES that a search system retrieved",
).replace(
    "Answer the one question asked at the end,",
    "Compare the passages with each other. Answer the one question asked at the end, about "
    "the one passage it names,",
)

EXAMPLES = """
Worked examples (made up; not data to judge):
QUESTION: how many bones are in the adult human body
PASSAGE: The skeleton supports the body and protects the organs. Babies are born with about 300 \
bones, some of which fuse as they grow, leaving adults with 206. Marrow inside the bones makes \
blood cells.
Grade: 2 (the answer is there, among other information)
QUESTION: what is the capital of australia
PASSAGE: Kangaroo meat is lean and high in protein, and many supermarkets sell it.
Grade: 0 (nothing to do with the question)
QUESTION: who wrote the novel frankenstein
PASSAGE: Frankenstein; or, The Modern Prometheus was written by Mary Shelley and first \
published in 1818.
Grade: 3 (dedicated to the question, with the exact answer)
QUESTION: how long should you boil an egg for a soft yolk
PASSAGE: Eggs are a cheap source of protein. Hens lay eggs with white or brown shells, and the \
colour of the shell does not change the taste.
Grade: 1 (on the topic, but no answer)"""
DEMO_SYSTEM = PASSAGE_SYSTEM + "\n" + EXAMPLES

YES_NO = ("yes", "no")
LIST_RELEVANT = Decision("phrasing.list_relevant", "relevant", YES_NO)
LIST_GRADE = Decision("phrasing.list_grade", "grade", (0, 1, 2, 3))


def lists(passages: list[str]) -> list[list[int]]:
    """The passages' indices in lists of :data:`LIST_SIZE`, by their text's sha256."""
    order = sorted(
        range(len(passages)), key=lambda i: hashlib.sha256(passages[i].encode()).digest()
    )
    return [order[k : k + LIST_SIZE] for k in range(0, len(order), LIST_SIZE)]


def list_asks(question: str, passages: list[str], members: list[int]) -> list[Ask]:
    """Two tails per passage after the list's opening (its passages numbered from 1, then the
    QUESTION)."""
    blocks = "\n".join(delimit(f"PASSAGE {n}", passages[i]) for n, i in enumerate(members, 1))
    shared = f"{blocks}\n{delimit_question(question)}"
    asks = []
    for n, i in enumerate(members, 1):
        relevant = (
            f"Does PASSAGE {n} answer the QUESTION, fully or in part (grade 2 or 3)? "
            "Answer yes or no."
        )
        for own, decision in (
            (relevant, LIST_RELEVANT),
            (f"Grade PASSAGE {n}: 0, 1, 2 or 3?", LIST_GRADE),
        ):
            asks.append(ask_request(LIST_SYSTEM, shared, own, decision, at=i, explain=False))
    return asks


def demo_asks(question: str, passages: list[str]) -> list[Ask]:
    """The product's passage calls under :data:`DEMO_SYSTEM`, and its baseline."""
    base = passage_opening(question, NO_PASSAGE)
    asks = [
        ask_request(
            DEMO_SYSTEM,
            base,
            GRADE_QUESTION,
            GRADE,
            at=-1,
            explain=False,
            read=question_span(base),
            baseline=True,
        )
    ]
    for i, passage in enumerate(passages):
        shared = passage_opening(question, passage)
        for own, decision in ((RELEVANT_QUESTION, RELEVANT), (GRADE_QUESTION, GRADE)):
            asks.append(
                ask_request(
                    DEMO_SYSTEM,
                    shared,
                    own,
                    decision,
                    at=i,
                    explain=False,
                    read=question_span(shared),
                )
            )
    return asks


NAMES = {
    "phrasing.list_relevant": "list_relevant",
    "phrasing.list_grade": "list_grade",
    "position.relevant": "demo_position",
    "relevance.grade": "demo_grade",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lists", type=Path)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--half", choices=("A", "B"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=("list", "demo"), help="ask one of the two alone")
    parser.add_argument("--limit", action="store_true", help="a smoke test: one query, 3 passages")
    args = parser.parse_args()
    queries = by_query(args.lists)
    a, _ = halves([q["qid"] for q in queries])
    if args.half:
        queries = [q for q in queries if (q["qid"] in a) == (args.half == "A")]
    if args.limit:
        queries = [{**q, "passages": dict(list(q["passages"].items())[:3])} for q in queries][:1]
    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    all_asks = []
    for q in queries:
        texts = list(q["passages"])
        asks: list[Ask] = []
        if args.only != "demo":
            asks += [
                x for members in lists(texts) for x in list_asks(q["question"], texts, members)
            ]
        if args.only != "list":
            asks += demo_asks(q["question"], texts)
        all_asks.append(asks)
    outcomes = ask_grouped(judge, [[x.request for x in asks] for asks in all_asks])
    rows = []
    for q, asks, gens in zip(queries, all_asks, outcomes, strict=True):
        found: dict[int, dict[str, float]] = defaultdict(dict)
        # the demo asks' readings against their baseline; the list asks read nothing
        answers = decide_all(asks, gens)
        for ask, answer in zip(asks, answers, strict=True):
            if ask.baseline or ask.decision is None:
                continue
            reads = answer.readings or {}
            found[ask.at][NAMES[ask.decision.kind]] = reads["judged"]
            if ask.decision.kind == "position.relevant" and "question" in reads:
                found[ask.at]["demo_question"] = reads["question"]
        rows += [{"qid": q["qid"], "piece": i, **found[i]} for i in range(len(q["passages"]))]
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} passages of {len(queries)} queries -> {args.out}")


if __name__ == "__main__":
    main()
