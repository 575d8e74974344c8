"""Honest seconds: the time a run reports (each row's ``stats.seconds``, the sum of its calls')
adds up to the wall time the run took, on the real engine (SmolLM2)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, ContextRecall, ContextRelevance, evaluate

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [
    json.loads(line)
    for line in (ROOT / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
    if line.strip()
][:6]


def test_the_rows_seconds_add_up_to_the_wall_time(judge: Any) -> None:
    """Every judge call's time is in exactly one row: the rows' seconds (decisions and reasons,
    all three metrics) are within 10% of the run's wall time, the judge loaded before it."""
    # reasons on (off by default): the reason calls' time must reach the rows as well
    metrics = [
        ContextRecall(reasons=True),
        ContextPosition(reasons=True),
        ContextRelevance(reasons=True),
    ]
    start = time.perf_counter()
    rows = list(evaluate(RECORDS, metrics, judge))
    wall = time.perf_counter() - start
    assert len(rows) == 3 * len(RECORDS)
    assert all(r.error is None for r in rows), [r.error for r in rows if r.error]
    stats = [r.result.stats for r in rows if r.result is not None]
    assert all(s is not None and s.seconds > 0 for s in stats)
    reported = sum(s.seconds for s in stats if s is not None)
    print(f"\nhonest seconds: rows {reported:.3f} s, wall {wall:.3f} s")
    assert abs(reported - wall) <= 0.10 * wall, (reported, wall)
