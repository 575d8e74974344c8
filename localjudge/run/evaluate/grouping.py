"""The judge calls of a chunk in one batch, those that share their opening next to each other.

The engine reuses a prefix another sequence holds, so calls with the same instructions and the
same shared data (``JudgeRequest.shared_chars``) are handed to it one after another: grouped by
instructions (first appearance), then by shared opening, in input order within a group.

A request asked twice in one batch (two identical passages of an item, say) is asked once: the
copies get its outcome with no seconds and no evaluated prompt tokens of their own, marked as
not made by the model (``cached``), the same whether the outcome came from the model or from a
cache, so a cached rerun writes the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from localjudge.errors import ContextOverflowError
from localjudge.judge.protocol import Judge, JudgeRequest, Outcome, generate_many

__all__ = ["ask_grouped"]


def ask_grouped(judge: Judge, groups: Sequence[Sequence[JudgeRequest]]) -> list[list[Outcome]]:
    """Every request of ``groups`` in one ``generate_many``, calls that share their opening
    (instructions, then the shared part of the data) next to each other; outcomes per group,
    in each group's order."""
    flat = [(g, k, r) for g, group in enumerate(groups) for k, r in enumerate(group)]
    first_system: dict[str, int] = {}
    first_opening: dict[tuple[str, str], int] = {}
    for n, (_, _, r) in enumerate(flat):
        first_system.setdefault(r.messages[0]["content"], n)
        first_opening.setdefault(_opening(r), n)
    order = sorted(
        range(len(flat)),
        key=lambda n: (
            first_system[flat[n][2].messages[0]["content"]],
            first_opening[_opening(flat[n][2])],
            n,
        ),
    )
    outcomes = _asked_once(judge, [flat[n][2] for n in order])
    out: list[list[Outcome]] = [[] for _ in groups]
    placed: list[tuple[int, int, Outcome]] = [
        (flat[n][0], flat[n][1], o) for n, o in zip(order, outcomes, strict=True)
    ]
    for g, _, o in sorted(placed, key=lambda t: (t[0], t[1])):
        out[g].append(o)
    return out


def _asked_once(judge: Judge, requests: list[JudgeRequest]) -> list[Outcome]:
    """``generate_many`` with each distinct request asked once; a copy's outcome costs nothing."""
    first: dict[tuple[object, ...], int] = {}
    distinct: list[JudgeRequest] = []
    source: list[int] = []
    for r in requests:
        key = (
            tuple((m["role"], m["content"]) for m in r.messages),
            r.schema,
            r.shared_chars,
            r.read_chars,
        )
        if key not in first:
            first[key] = len(distinct)
            distinct.append(r)
        source.append(first[key])
    outcomes = generate_many(judge, distinct) if distinct else []
    seen: set[int] = set()
    out: list[Outcome] = []
    for k in source:
        outcome = outcomes[k]
        if k in seen and not isinstance(outcome, ContextOverflowError):
            stats = replace(outcome.stats, seconds=0.0, evaluated_prompt_tokens=0)
            outcome = replace(outcome, stats=stats, cached=True)
        seen.add(k)
        out.append(outcome)
    return out


def _opening(request: JudgeRequest) -> tuple[str, str]:
    """A request's instructions and the shared part of its data."""
    last = request.messages[-1]["content"]
    return request.messages[0]["content"], last[: request.shared_chars]
