"""The worker scripts of benchmarks/speed/ (code run by ``python -c`` in a process of its own): each
starts with the shared opening and compiles, and the opening's tally counts as documented."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from benchmark_scripts import BENCHMARKS, load

SPEED = BENCHMARKS / "speed"

WORKERS = {
    "engine": ("WORKER", "TODAY_WORKER", "CEILING_WORKER"),
    "judge_speed": ("WORKER",),
    "prefix_reuse": ("WORKER", "TOKENS"),
    "protocol_speed": ("WORKER",),
}


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(SPEED))  # the scripts import workers.py beside them
    return load("benchmarks/speed/workers")


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_every_worker_opens_with_the_shared_opening_and_compiles(workers, name):
    module = load(f"benchmarks/speed/{name}")
    for attr in WORKERS[name]:
        code = getattr(module, attr)
        assert workers.OPENING in code, attr
        compile(code, f"{name}.{attr}", "exec")


def test_the_openings_tally_counts_scored_and_failed_items_per_metric(workers):
    scope: dict[str, object] = {}
    opening = workers.OPENING.split("cfg = json.loads", 1)[0]  # no argv, no stdin here
    tally = workers.OPENING[workers.OPENING.index("# per metric") :]
    exec(opening + tally, scope)

    def row(metric, seconds=None, tokens=0, error=None):
        stats = SimpleNamespace(seconds=seconds, completion_tokens=tokens)
        result = SimpleNamespace(stats=stats) if seconds is not None else None
        return SimpleNamespace(metric=metric, result=result, error=error)

    results = [
        row("recall", 1.5, 10),
        row("recall", 0.5, 4),
        row("recall", error="x"),
        row("position", 2.0, 1),
    ]
    got = scope["per_metric"](results, tokens="completion_tokens")
    assert got == {
        "recall": {"n": 2, "seconds": 2.0, "errors": 1, "tokens": 14},
        "position": {"n": 1, "seconds": 2.0, "errors": 0, "tokens": 1},
    }
