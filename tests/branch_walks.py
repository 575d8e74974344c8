"""What the real-engine tests of branch points share: requests evaluated one by one with
nothing kept, and the prompt tokens a set of requests costs when each node of their tree (an
opening to any of its branch points) is evaluated once."""

from __future__ import annotations

from typing import Any

from localjudge.judge.protocol import JudgeRequest


def one_by_one(judge: Any, requests: list[JudgeRequest]) -> list[Any]:
    """Each request evaluated from its instructions on: nothing kept, no slot reused."""
    out = []
    for r in requests:
        judge.engine.kv.forget()
        out.extend(judge.generate_many([r]))
    judge.engine.kv.forget()
    return out


def node_cost(judge: Any, requests: list[JudgeRequest]) -> tuple[int, int]:
    """The prompt tokens ``requests`` cost when each node is evaluated once (the tokens of
    every request that no request before it began with, at its branch points), and the
    tokens of their distinct instructions (the system text, evaluated once per text)."""
    seen: set[tuple[int, ...]] = set()
    systems: dict[tuple[int, ...], int] = {}
    cost = 0
    for r in requests:
        p = judge.render(r.messages, branch_chars=r.branch_chars)
        tokens = tuple(p.tokens)
        systems[tokens[: p.fixed]] = p.fixed
        start = max((b for b in (p.fixed, *p.branches) if tokens[:b] in seen), default=p.fixed)
        seen.update(tokens[:b] for b in (p.fixed, *p.branches))
        cost += len(tokens) - start
    return cost, sum(systems.values())
