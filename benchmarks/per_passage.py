"""Per-passage decisions: can the judge tell a relevant passage when it is asked about one alone?

    python benchmarks/per_passage.py DATA [-m MODEL] [--layout alone|list] [--limit N]
                                     [--cache FILE] [-t THREADS] [--json FILE]

A protocol experiment for the judge issue's item 3, with its own prompts (not the product's).
When it was written the product asked for all of an item's passages in one output (one verdict
per passage, in order), and with the 1.5B judge those verdicts followed the passage's place more
than its text (``order.py``). The product now asks one decision per call too (its own
instructions, ``localjudge.metrics.instructions``: yes/no and TREC grades 0-3, shown the PASSAGE
alone); this script still compares the two layouts with its experimental prompts. Here every
passage of every labelled item gets calls of its own, each ending on one decision:

- ``relevant``: ``{"relevant": true|false}``, the context position decision;
- ``relevance``: ``{"relevance": "high"|"medium"|"low"|"none"}``, the context relevance level.

``--layout alone`` shows the QUESTION and that one PASSAGE (its two calls share that prefix);
``--layout list`` shows the QUESTION and every CONTEXT, numbered, as the product does, and names
the passage in the TASK line (an item's ten calls share the list). The soft decision (the
probability of each allowed value, read from the logits) comes with every call.

DATA: labelled JSONL with ``labels.relevant`` and ``labels.levels`` per passage
(``benchmarks/convert.py llmjudge``). Printed, over all passages: the people's and the judge's
yes-rates, Cohen's kappa of the hard decision, the soft decision's ROC AUC, the kappa the soft
decision would get at the threshold that matches the people's yes-rate (a calibration the
product does not do: an upper bound on what thresholding alone can give), the quadratic-weighted
kappa of the hard level, and the judge's yes-rate by rank.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from localjudge import load_judge
from localjudge.judge.protocol import JudgeRequest
from localjudge.judge.schemas import StrictModel
from localjudge.metrics.base import DATA_RULE, chat, delimit, numbered_contexts
from localjudge.stats.agreement import kappa, roc_auc

LEVELS = ("none", "low", "medium", "high")

SYSTEM = f"""You judge passages a search system retrieved for a QUESTION. {DATA_RULE}
For the one passage the TASK names, decide how well it answers the QUESTION.
A passage is relevant when a reader could answer the QUESTION from it, fully or in part. It is \
not relevant when it is only about the same topic, or about something else.
Levels: "high": the passage contains the exact answer; "medium": it answers the QUESTION but \
the answer is partial or buried; "low": it is on the topic but does not answer; "none": it has \
nothing to do with the QUESTION.
Answer in the JSON format asked."""


#: the context position decision about one passage (no docstring: it would enter the schema)
class Rel(StrictModel):
    relevant: bool


#: the context relevance level of one passage
class Lev(StrictModel):
    relevance: Literal["high", "medium", "low", "none"]


def requests(question: str, contexts: Sequence[str], layout: str) -> list[JudgeRequest]:
    """Two calls per passage (relevant, then level), in passage order."""
    out = []
    for k, piece in enumerate(contexts):
        if layout == "list":
            shared = f"{delimit('QUESTION', question)}\n{numbered_contexts(contexts)}\n"
            name = f"CONTEXT {k}"
        else:
            shared = f"{delimit('QUESTION', question)}\n{delimit('PASSAGE', piece)}\n"
            name = "the PASSAGE"
        tasks = (
            (Rel, f'TASK: is {name} relevant to the QUESTION? Answer {{"relevant":true}} '
             'or {"relevant":false}.'),
            (Lev, f'TASK: grade {name}: {{"relevance":"high"|"medium"|"low"|"none"}}.'),
        )  # fmt: skip
        for schema, task in tasks:
            out.append(JudgeRequest(chat(SYSTEM, shared + task), schema, shared_chars=len(shared)))
    return out


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Agreement over every passage of ``rows`` (each ``{labels, judged}``)."""
    human = [bool(v) for r in rows for v in r["labels"]["relevant"]]
    judged = [j for r in rows for j in r["judged"]]
    hard = [j["relevant"] for j in judged]
    soft = [j["p_relevant"] for j in judged]
    people_rate = float(np.mean(human))
    threshold = float(np.quantile(soft, 1 - people_rate))
    levels = [lv for r in rows for lv in r["labels"]["levels"]]
    ranks = max(len(r["judged"]) for r in rows)
    return {
        "items": len(rows),
        "pieces": len(human),
        "yes_people": people_rate,
        "yes_judge": float(np.mean(hard)),
        "kappa": kappa(human, hard, [False, True]),
        "soft_auc": roc_auc(human, soft),
        "kappa_at_people_rate": kappa(human, [p >= threshold for p in soft], [False, True]),
        "qwk": kappa(levels, [j["level"] for j in judged], LEVELS, weights="quadratic"),
        "judge_levels": {lv: sum(j["level"] == lv for j in judged) / len(judged) for lv in LEVELS},
        "yes_by_rank": [
            float(np.mean([r["judged"][i]["relevant"] for r in rows if len(r["judged"]) > i]))
            for i in range(ranks)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--layout", choices=("alone", "list"), default="alone")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cache", default=None, help="judge-call cache (default: none)")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    records = [json.loads(line) for line in args.data.open(encoding="utf-8") if line.strip()]
    records = [r for r in records if {"relevant", "levels"} <= set(r.get("labels", {}))]
    records = records[: args.limit or None]
    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or False)
    rows, start = [], time.perf_counter()
    for record in records:
        outs = judge.generate_many(
            requests(record["user_input"], record["retrieved_contexts"], args.layout)
        )
        judged = []
        for rel, lev in zip(outs[0::2], outs[1::2], strict=True):
            if isinstance(rel, Exception) or isinstance(lev, Exception):
                raise SystemExit(f"{record['id']}: {rel if isinstance(rel, Exception) else lev}")
            probs = {d.key: d.probs for d in rel.decisions}["relevant"]
            judged.append(
                {"relevant": rel.value.model_dump()["relevant"], "p_relevant": probs["true"],
                 "level": lev.value.model_dump()["relevance"]}
            )  # fmt: skip
        rows.append({"labels": record["labels"], "judged": judged})
    seconds = time.perf_counter() - start

    f = figures(rows)
    per_item = seconds / f["items"]
    print(f"# {args.data.name}, judge {judge.identity.model}, layout {args.layout}, "
          f"{f['items']} items, {f['pieces']} passages, {per_item:.1f} s/item")  # fmt: skip
    print(f"yes-rate: people {f['yes_people']:.3f}, judge {f['yes_judge']:.3f}")
    print(f"kappa {f['kappa']:.3f}  soft AUC {f['soft_auc']:.3f}  "
          f"kappa at the people's rate {f['kappa_at_people_rate']:.3f}")  # fmt: skip
    shares = " ".join(f"{lv} {share:.2f}" for lv, share in f["judge_levels"].items())
    print(f"relevance QWK {f['qwk']:.3f}  judge's levels: {shares}")
    print("judge yes by rank: " + " ".join(f"{y:.2f}" for y in f["yes_by_rank"]))
    if args.json:
        args.json.write_text(json.dumps(f, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
