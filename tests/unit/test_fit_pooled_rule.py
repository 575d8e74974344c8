"""fitting/fit_pooled_rule.py: the grade's cut-offs held to the obvious shares, recall's items."""

from __future__ import annotations

import random
from typing import Any

from benchmark_scripts import load

pooled = load("fitting/fit_pooled_rule")


def _rows(half: str, seed: int) -> list[dict[str, Any]]:
    """LLMJudge-like lists of four grades, and XQuAD lists whose other article's paragraph reads
    close to the answer's in one language in three (the case the constraint is for)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    rows += [
        {
            "source": "llmjudge",
            "id": f"l{half}{n}",
            "group": f"l{half}{n}",
            "half": half,
            "lang": "en",
            "role": "",
            "grade": g,
            "grade_soft": 1.5 + 0.3 * g + rng.gauss(0, 0.5),
            "q": 0.4 * g + rng.gauss(0, 0.6),
            "base": 0.0,
        }
        for n in range(40)
        for g in range(4)
    ]
    for n in range(60):
        hard_lang = n % 3 == 0
        for role, grade, read in (("answer", 3, 1.0), ("other", 0, -1.0), ("same", 1, 0.0)):
            q = -0.15 if hard_lang and role == "other" else read
            rows.append(
                {
                    "source": "xquad",
                    "id": f"x{half}{n}",
                    "group": f"x{half}{n}",
                    "half": half,
                    "lang": "el" if hard_lang else "en",
                    "role": role,
                    "grade": grade,
                    "grade_soft": 2.2 + rng.gauss(0, 0.1),
                    "q": q + rng.gauss(0, 0.1),
                    "base": 0.0,
                }
            )
    return rows


def test_the_grade_cutoffs_reach_the_obvious_shares_on_a_when_they_can() -> None:
    rows = _rows("A", 1)
    d, info = pooled.constrained_grade(rows)
    assert info["constraint met on A"]
    hard = d.hard(pooled.rule.reading_values(rows, pooled.GRADE))
    answer, other = pooled._grade_shares(rows, hard)
    assert answer >= pooled.ON_A
    assert other >= pooled.ON_A
    # the fitted cut-offs alone miss another article's share: the constraint moved them
    fitted = pooled.rule.Decider(True, d.combination, tuple(info["fitted cuts"]))
    assert (
        pooled._grade_shares(rows, fitted.hard(pooled.rule.reading_values(rows, pooled.GRADE)))[1]
        < pooled.ON_A
    )
    # only the two lower cut-offs move, and not past each other
    assert d.cuts[0] < d.cuts[1] <= d.cuts[2]
    assert d.cuts[2] == info["fitted cuts"][2]


def test_recall_items_are_supported_when_half_their_statements_are() -> None:
    rows = [
        {"source": "xquadrecall", "id": "a", "label": 1},
        {"source": "xquadrecall", "id": "a", "label": 1},
        {"source": "xquadrecall", "id": "b", "label": 0},
        {"source": "wice", "id": "w", "label": 0},
    ]
    # a: one statement of two supported -> supported; b: supported -> wrong
    assert pooled._items_balanced(rows, [1, 0, 1, 1]) == 0.5
    assert pooled._items_balanced(rows, [1, 0, 0, 1]) == 1.0
    assert pooled._items_balanced(rows[3:], [1]) is None
