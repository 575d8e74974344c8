"""Verdicts about the item, never about the prompt, from the real bundled judges on the bundled
examples: every recall statement is a span of its reference, none repeats, no counted missing
item repeats the prompt, and there is one verdict per piece or statement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localjudge import evaluate, load_judge
from localjudge.metrics import (
    ContextPosition,
    ContextRecall,
    ContextRelevance,
    position,
    recall,
    relevance,
)
from localjudge.metrics.base import DEFAULT_PROTOCOL
from localjudge.metrics.branched import copies_of
from localjudge.metrics.instructions import MISSING_QUESTION, MISSING_SYSTEM
from localjudge.metrics.statements import split_statements

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [
    json.loads(line)
    for line in (ROOT / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
SYSTEMS = {"recall": recall.SYSTEM, "position": position.SYSTEM, "relevance": relevance.SYSTEM}


def check_content(records: list[dict[str, Any]], results: list[Any]) -> dict[str, int]:
    """Assert the content properties; return counts of what was discarded or counted."""
    counts = {"copied_reasons": 0, "discarded_missing": 0}
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    for r in results:
        rec, res = records[r.index], r.result
        assert res is not None
        if r.metric == "recall":
            statements = [v["statement"] for v in res.verdicts]
            assert statements == split_statements(rec["reference"])
            assert all(s in rec["reference"] for s in statements)
            normal = [" ".join(s.split()).casefold() for s in statements]
            assert len(set(normal)) == len(normal), statements
            assert res.value == sum(v["attributed"] for v in res.verdicts) / len(statements)
        else:
            assert len(res.verdicts) == len(rec["retrieved_contexts"])
            assert [v["index"] for v in res.verdicts] == list(range(len(res.verdicts)))
        if r.metric == "relevance":
            # the missing list is written after the instructions of its own call
            missing_prompt = f"{SYSTEMS['relevance']}\n{MISSING_SYSTEM}\n{MISSING_QUESTION}"
            prompt = {
                " ".join(s.split()).casefold() for s in split_statements(missing_prompt, 10_000)
            }
            for item in res.details["missing"]:
                folded = " ".join(item.split()).casefold()
                assert folded not in prompt
                assert not any(len(p.split()) >= 4 and p in folded for p in prompt), item
                assert "korvath" not in folded, item
                assert "lunesse" not in folded, item
            counts["discarded_missing"] += len(res.details.get("discarded_missing", []))
        copied = res.details.get("copied_reasons", [])
        reasons = [v["reason"] for v in res.verdicts]
        data = "\n".join(
            [
                rec["user_input"],
                *rec["retrieved_contexts"],
                rec.get("reference", ""),
                rec.get("response", ""),
            ]
        )
        assert copied == copies_of(DEFAULT_PROTOCOL).reasons(reasons, data)
        counts["copied_reasons"] += len(copied)
    return counts


def test_the_default_judge_on_the_examples(judge: Any) -> None:
    # reasons on (off by default): the reasons are content checked here too
    metrics = [
        ContextRecall(reasons=True),
        ContextPosition(reasons=True),
        ContextRelevance(reasons=True),
    ]
    results = list(evaluate(RECORDS, metrics, judge))
    assert len(results) == 3 * len(RECORDS)
    check_content(RECORDS, results)
    # the README's headline example: its two sentences, judged one by one
    zh = next(r for r in results if r.id == "zh-eiffel" and r.metric == "recall")
    assert [v["statement"] for v in zh.result.verdicts] == [
        "埃菲尔铁塔位于巴黎。",
        "他的名字叫汤姆。",
    ]


def test_gemma_on_the_examples(isolated_env: Path) -> None:
    gemma = load_judge("gemma3-270m", n_threads=2, cache=False)
    metrics = [ContextRecall(reasons=True), ContextRelevance(reasons=True)]
    results = list(evaluate(RECORDS, metrics, gemma))
    check_content(RECORDS, results)
