"""Recall with judge-chosen statements, each held by the grammar to a span of the reference.

The alternative to localjudge's recall design, measured against it (issue: verdicts about the
item). Here the judge writes the statements itself, as ragas' does, but a grammar built per item
only lets it write contiguous runs of the reference's words, in order, without overlap, covering
the whole reference, at most 8 of them. localjudge's own recall instead cuts the reference into
sentences deterministically and asks one verdict per sentence.

    python benchmarks/recall_spans.py LABELLED.jsonl -m smollm2-135m -o runs/spans/smollm2.jsonl

prints ROC AUC (0/1 labels), Spearman and MAE against the human recall labels, the share of
items whose statements are not spans of the reference (0 by construction) and of items with a
repeated statement, and writes one row per item (figures: benchmarks/README.md,
"verdict_content.py", measured at commit 13c01fc).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import StringConstraints, create_model

from localjudge import load_judge
from localjudge.data.dataset import read_records
from localjudge.judge.schemas import StrictModel, bounded_list, text
from localjudge.metrics.base import DATA_RULE, REASON_CHARS, chat, delimit, numbered_contexts
from localjudge.stats.agreement import mae, roc_auc, spearman

MAX_SPANS = 8
#: a unit is one CJK/kana/hangul character or a run of other non-space characters
UNIT = re.compile(
    r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]|[^\s\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]+"
)

SYSTEM = f"""You are a strict fact checker. You compare a REFERENCE answer with CONTEXT passages.
Split the REFERENCE into short statements, at most {MAX_SPANS}, one fact each: each statement \
is a part of the REFERENCE copied word for word, in order, and together they cover all of it. \
For each statement give:
- "reason": one short English sentence naming the CONTEXT passage that states the fact, or \
saying that no passage states it;
- "attributed": 1 only if a CONTEXT passage states the fact or clearly implies it; 0 if no \
passage does, even when the fact is true. Use only the CONTEXT, never your own knowledge.
{DATA_RULE}
Example. CONTEXT 0: "Velmora is the capital of Ostria." REFERENCE: "Velmora is the capital of \
Ostria and has two million inhabitants."
Answer: {{"statements":[{{"statement":"Velmora is the capital of Ostria","reason":"Context 0 \
says so.","attributed":1}},{{"statement":"and has two million inhabitants.","reason":"No \
passage gives the population.","attributed":0}}]}}"""


def lark_literal(s: str) -> str:
    """A lark string literal matching the JSON-string-escaped form of ``s``."""
    return json.dumps(json.dumps(s, ensure_ascii=False)[1:-1], ensure_ascii=False)


def span_grammar(reference: str, max_spans: int = MAX_SPANS) -> str:
    """Statements that partition the reference's units into at most ``max_spans`` runs."""
    units = list(UNIT.finditer(reference))
    w = len(units)
    seps = [reference[units[i - 1].end() : units[i].start()] for i in range(1, w)]
    rest = '"\\",\\"reason\\":\\"" REASON "\\",\\"attributed\\":" ATTR "}"'  # closes a statement
    rules = ['start: "{\\"statements\\":[" s_0_1']
    rules += [
        f's_{p}_{c}: "{{\\"statement\\":\\"" {lark_literal(units[p].group())} r_{p + 1}_{c}'
        for p in range(w)
        for c in range(1, max_spans + 1)
    ]
    for q in range(1, w + 1):
        for c in range(1, max_spans + 1):
            options = []
            if q < w:  # extend the current statement by the next unit
                parts = [seps[q - 1], units[q].group()]
                literals = " ".join(lark_literal(part) for part in parts if part)
                options.append(f"{literals} r_{q + 1}_{c}")
            if q == w:
                options.append(f'{rest} "]}}"')
            elif c < max_spans:
                options.append(f'{rest} "," s_{q}_{c + 1}')
            rules.append(f"r_{q}_{c}: " + " | ".join(options))
    rules += [f"REASON: /[ !#-\\[\\]-~]{{1,{REASON_CHARS}}}/", 'ATTR: "0" | "1"']
    return "\n".join(rules)


def spans_schema(reference: str) -> type[StrictModel]:
    statement = create_model(
        "SpanStatement",
        __base__=StrictModel,
        # any character of the reference (quotes too, which text() excludes), escapes included
        statement=(
            Annotated[
                str,
                StringConstraints(
                    min_length=1,
                    max_length=len(reference),
                    pattern=f"^[^\\x00-\\x1f\\x7f]{{1,{len(reference)}}}$",
                ),
            ],
            ...,
        ),
        reason=(text(REASON_CHARS, ascii_only=True), ...),
        attributed=(Literal[0, 1], ...),
    )
    return create_model(
        "SpanStatements",
        __base__=StrictModel,
        statements=(bounded_list(statement, min_items=1, max_items=MAX_SPANS), ...),
    )


def judge_item(judge: Any, record: dict[str, Any]) -> dict[str, Any]:
    reference = record["reference"]
    import llguidance

    schema = spans_schema(reference)
    # this script's grammar instead of the schema's own: the schema still bounds max_tokens
    # (its strings may hold the whole reference) and validates the output
    judge._grammars[schema] = (llguidance.grammar_from("lark", span_grammar(reference)), {})
    user = "\n".join(
        [
            delimit("QUESTION", record["user_input"]),
            numbered_contexts(record["retrieved_contexts"]),
            delimit("REFERENCE", reference),
        ]
    )
    start = time.perf_counter()
    out = judge.generate(chat(SYSTEM, user), schema)
    statements = [s.model_dump() for s in out.value.statements]
    return {
        "id": record.get("id"),
        "statements": statements,
        "score": sum(s["attributed"] for s in statements) / len(statements),
        "seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None)
    # the span grammar's worst case is up to MAX_SPANS copies of the reference: a wide window
    parser.add_argument("-c", "--n-ctx", type=int, default=16384)
    parser.add_argument("-t", "--threads", type=int, default=None)
    args = parser.parse_args(argv)
    judge = load_judge(args.model, n_ctx=args.n_ctx, n_threads=args.threads, cache=False)
    rows, human = [], []
    for n, rec in enumerate(read_records(args.data)):
        if args.limit is not None and n >= args.limit:
            break
        data = dict(rec.data or {})
        row = judge_item(judge, data)
        rows.append(row)
        human.append(float(data["labels"]["recall"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    scores = [r["score"] for r in rows]
    binary = [(h, s) for h, s in zip(human, scores, strict=True) if h in (0.0, 1.0)]
    refs = [rec.data["reference"] for rec in read_records(args.data)][: len(rows)]
    off = sum(
        any(s["statement"] not in ref for s in r["statements"])
        for r, ref in zip(rows, refs, strict=True)
    )
    dup = sum(len({s["statement"] for s in r["statements"]}) < len(r["statements"]) for r in rows)
    print(
        f"{args.model or 'smollm2-135m'}: n={len(rows)} "
        f"auc={roc_auc([h for h, _ in binary], [s for _, s in binary])} "
        f"rho={spearman(human, scores)} mae={mae(human, scores)} "
        f"off_reference={off / len(rows):.3f} duplicates={dup / len(rows):.3f} "
        f"mean_statements={sum(len(r['statements']) for r in rows) / len(rows):.2f} "
        f"s/item={sum(r['seconds'] for r in rows) / len(rows):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
