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
    """One decision per call, by the rules above; a reason call gets "rule"."""
    data = prompt_data(messages)
    name = schema.__name__
    if name == "SupportedDecision":
        contexts = [data[k] for k in data if k.startswith("CONTEXT")]
        return {"supported": "yes" if any(data["STATEMENT"] in c for c in contexts) else "no"}
    if name == "RelevantDecision":
        return {"relevant": "yes" if "yes" in data["PASSAGE"] else "no"}
    if name == "GradeDecision":
        return {"grade": 3 if "yes" in data["PASSAGE"] else 0}
    if name == "RepeatsDecision":
        return {"repeats": "yes" if data["PASSAGE"] in data["RESPONSE"] else "no"}
    if name == "Missing":
        return {"missing": []}
    assert name == "Reason", name
    return {"reason": "rule"}


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
