"""Memory of long runs (no model): scoring streams, and the run's end must not blow up either.

``benchmarks/speed/memory.py`` measures the same at 100k items; these are the quick versions.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

from localjudge.metrics import ContextPosition
from localjudge.run.evaluate.file_run import eval_file
from localjudge.stats.bootstrap import mean_interval as bootstrap_ci
from localjudge.testing import ScriptedJudge, prompt_data


def _reply_clearing(judge_box: list[ScriptedJudge]) -> Any:
    def reply(messages: list[dict[str, str]], schema: type[Any]) -> dict[str, Any]:
        judge_box[0].calls.clear()  # ScriptedJudge keeps every call; not what is measured here
        if schema.__name__ == "Reason":
            return {"reason": "r"}
        if schema.__name__ == "GradeDecision":  # an item's baseline call (no passage)
            return {"grade": 0}
        # one passage per call: relevant or not by its text, so scores vary between items
        return {"relevant": "yes" if prompt_data(messages)["PASSAGE"][0] in "abc" else "no"}

    return reply


def test_eval_file_memory_does_not_grow_with_the_items(tmp_path: Path) -> None:
    rng = random.Random(0)
    data = tmp_path / "many.jsonl"
    n = 5000
    with data.open("w", encoding="utf-8") as f:
        for i in range(n):
            rec = {
                "id": f"item-{i}",
                "user_input": f"question {i}?",
                "retrieved_contexts": [
                    "".join(rng.choice("abcdef ") for _ in range(700)) for _ in range(3)
                ],
            }
            f.write(json.dumps(rec) + "\n")
    box: list[ScriptedJudge] = []
    judge = ScriptedJudge(_reply_clearing(box))
    box.append(judge)
    seen: dict[int, int] = {}
    count = [0]

    def on_result(_: Any) -> None:
        count[0] += 1
        if count[0] in (1000, n):
            seen[count[0]] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        eval_file(
            data,
            tmp_path / "out",
            judge=judge,
            metrics=[ContextPosition()],
            on_result=on_result,
        )
    finally:
        tracemalloc.stop()
    growth = seen[n] - seen[1000]
    # each record is ~2.2 kB of text; keeping them would grow by ~9 MB. A score per item (the
    # summary needs them) is ~32 bytes.
    assert growth < 1_000_000, f"{growth / (n - 1000):.0f} bytes per item"


def test_summary_statistics_memory_is_bounded() -> None:
    scores = [random.Random(i).random() for i in range(20_000)]
    tracemalloc.start()
    try:
        ci = bootstrap_ci(scores)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ci is not None
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MB for {len(scores)} scores"
