"""A rule-following scripted judge and the scores its rules imply, shared by pipeline tests.

Recall: a reference statement is attributed when a context contains it. Position: a piece is
relevant when it contains 'yes'. Relevance: 'yes' pieces are high, others none; a piece is used
when the response contains it; nothing is missing.
"""

from __future__ import annotations

from fractions import Fraction

from localjudge.metrics.statements import split_statements
from localjudge.testing import prompt_data


def rule_records(n):
    """``n`` items the rules score: a supported and an unknown statement, a relevant and a noise
    piece, an answer the relevant piece gives."""
    return [
        {
            "id": f"r{i}",
            "user_input": f"question {i}?",
            "retrieved_contexts": [f"yes fact {i}.", f"noise {i}"],
            "reference": f"yes fact {i}. unknown {i}.",
            "response": f"yes fact {i}.",
        }
        for i in range(n)
    ]


def rule_reply(messages, schema):
    data = prompt_data(messages)
    contexts = [data[f"CONTEXT {i}"] for i in range(sum(k.startswith("CONTEXT") for k in data))]
    name = schema.__name__
    if name.startswith("RecallVerdicts"):
        statements = [
            data[f"STATEMENT {i}"] for i in range(sum(k.startswith("STATEMENT") for k in data))
        ]
        return {
            "statements": [
                {
                    "index": i,
                    "reason": "matched" if any(s in c for c in contexts) else "absent",
                    "attributed": int(any(s in c for c in contexts)),
                }
                for i, s in enumerate(statements)
            ]
        }
    if name.startswith("PositionVerdicts"):
        return {
            "verdicts": [
                {"index": i, "reason": "rule", "relevant": "yes" in c}
                for i, c in enumerate(contexts)
            ]
        }
    assert name.startswith("RelevanceVerdicts"), name
    return {
        "pieces": [
            {
                "index": i,
                "reason": "rule",
                "relevance": "high" if "yes" in c else "none",
                "used": c in data["RESPONSE"],
            }
            for i, c in enumerate(contexts)
        ],
        "missing": [],
    }


def expected_recall(rec):
    sentences = split_statements(rec["reference"])
    return sum(any(s in c for c in rec["retrieved_contexts"]) for s in sentences) / len(sentences)


def expected_position(rec):
    ctx = rec["retrieved_contexts"]
    total = sum(Fraction(1, i + 1) for i in range(len(ctx)))
    return float(sum(Fraction(1, i + 1) for i, c in enumerate(ctx) if "yes" in c) / total)


def expected_relevance(rec):
    ctx = rec["retrieved_contexts"]
    high = ["yes" in c for c in ctx]
    unused = sum(1 for c, h in zip(ctx, high, strict=True) if h and c not in rec["response"])
    return max(0.0, sum(high) / len(ctx) - 0.1 * unused)


EXPECTED = {
    "recall": expected_recall,
    "position": expected_position,
    "relevance": expected_relevance,
}
