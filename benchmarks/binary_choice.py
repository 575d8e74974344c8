"""What the reading benchmarks (``statement_reading.py``, ``answer_reading.py``,
``recall_phrasings.py``, ``used_phrasings.py``) share: a call that reads the block closing its
shared opening (:func:`closing_read_ask`), a call's own reading (:func:`own_reading`), their
command line (:func:`command_line`), and the rule for a yes/no decision with
several readings: candidates (tuples of readings) fitted as a logistic combination with a
cut-off, chosen on half A by the mean held-out figure over random halvings of its groups,
reported on half B with bootstrap intervals over groups.

Rows are dicts with an ``id`` (the group: a claim, an item), the readings by name, the human
label under ``label`` and the product's hard value under ``product``.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from localjudge.judge.protocol import Generation
from localjudge.metrics.asks import Ask, Decision, decide, readings
from localjudge.metrics.base import delimit
from localjudge.metrics.instructions import ask_request
from localjudge.stats.agreement import cohen_kappa
from localjudge.stats.cutoffs_fit import (
    Observation,
    _balanced_accuracy,
    agreement,
    fit,
    hard,
)

SPLITS = 20
TIE = 0.02
Apply = Callable[[list[dict[str, Any]]], tuple[list[Observation], list[int]]]


def closing_read_ask(
    system: str, opening: str, tag: str, text: str, own: str, decision: Decision, **kw: Any
) -> Ask:
    """A call whose shared opening is ``opening`` then ``text`` in a ``tag`` block, that block's
    text read (as ``delimit`` shows it); ``own`` after it; ``kw``: ``at`` and ``baseline``."""
    shared = f"{opening}{delimit(tag, text)}\n"
    start = shared.rindex(f"<<{tag}>>\n") + len(f"<<{tag}>>\n")
    read = (start, shared.rindex(f"\n<</{tag}>>"))
    return ask_request(system, shared, own, decision, explain=False, read=read, **kw)


def own_reading(ask: Ask, generation: Generation[Any]) -> float:
    """A call's own reading with no cut-off (``judged``): a yes/no decision's log-odds of its
    positive value, a graded one's expected value."""
    answer = decide(ask, generation)
    assert ask.decision is not None
    assert answer.soft is not None
    return readings(ask.decision, answer.soft, None, None)["judged"]


def fitted(
    train: list[dict[str, Any]], names: tuple[str, ...], human: Callable[[Any], int], objective: str
) -> Apply:
    """The combination of ``names`` and its cut-off, both fitted on ``train``: a function from
    rows to their observations and hard values."""
    from localjudge.stats.combination_fit import Reads, combined_soft, fit_combination

    def reads(rows: list[dict[str, Any]]) -> list[Reads]:
        return [Reads(r["id"], {n: r[n] for n in names}, human(r)) for r in rows]

    combination = fit_combination(reads(train), names, graded=False)

    def observed(rows: list[dict[str, Any]]) -> list[Observation]:
        rs = reads(rows)
        soft = combined_soft(combination, rs, graded=False)
        return [Observation(o.group, s, o.human) for o, s in zip(rs, soft, strict=True)]

    cut = fit(observed(train), graded=False, objective=objective)

    def apply(rows: list[dict[str, Any]]) -> tuple[list[Observation], list[int]]:
        obs = observed(rows)
        return obs, hard(obs, cut, graded=False)

    return apply


def score(obs: list[Observation], judged: list[int], objective: str) -> float:
    human, judge = np.asarray([o.human for o in obs]), np.asarray(judged)
    if objective == "balanced_accuracy":
        value = _balanced_accuracy(human, judge)
        return value if value is not None else 0.5
    value = cohen_kappa(human, judge, 2, quadratic=False)
    return value if value is not None else 0.0


def choose(
    rows_a: list[dict[str, Any]],
    candidates: dict[str, tuple[str, ...]],
    human: Callable[[Any], int],
    objective: str,
    seed: str,
) -> tuple[str, dict[str, float]]:
    """The candidate the rule picks on ``rows_a``, and each one's mean held-out figure over
    :data:`SPLITS` x 2 halvings of its groups; ties within :data:`TIE` go to fewer readings,
    then to the earlier candidate (the product's own first)."""
    ids = sorted({r["id"] for r in rows_a})
    rng = random.Random(seed)
    scores: dict[str, list[float]] = defaultdict(list)
    for _ in range(SPLITS):
        shuffled = ids[:]
        rng.shuffle(shuffled)
        one = set(shuffled[: len(shuffled) // 2])
        for part in (one, set(ids) - one):
            train = [r for r in rows_a if r["id"] in part]
            test = [r for r in rows_a if r["id"] not in part]
            for name, names in candidates.items():
                obs, judged = fitted(train, names, human, objective)(test)
                scores[name].append(score(obs, judged, objective))
    means = {n: float(np.mean(v)) for n, v in scores.items()}
    best = max(means.values())
    order = list(candidates)
    chosen = min(
        (c for c in candidates if means[c] >= best - TIE),
        key=lambda c: (len(candidates[c]), order.index(c)),
    )
    return chosen, means


def _one(f: dict[str, Any]) -> str:
    ci = f.get("ci95")
    return f"{f['value']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def report(
    train: list[dict[str, Any]],
    test: list[dict[str, Any]],
    candidates: dict[str, tuple[str, ...]],
    human: Callable[[Any], int],
    objective: str,
) -> dict[str, Any]:
    """Each candidate fitted on ``train``, measured on ``test`` (printed), and the product's
    own hard values beside them."""
    out: dict[str, Any] = {}
    for name, names in candidates.items():
        obs, judged = fitted(train, names, human, objective)(test)
        shifted = [
            Observation(o.group, float(j), o.human) for o, j in zip(obs, judged, strict=True)
        ]
        found = agreement(shifted, (0.5,), graded=False)
        found["auc"] = agreement(obs, None, graded=False)["auc"]
        out[name] = found
    shipped = [Observation(r["id"], float(r["product"]), human(r)) for r in test]
    out["the product now"] = agreement(shipped, (0.5,), graded=False)
    del out["the product now"]["auc"]  # of hard values: not a soft AUC
    for name, found in out.items():
        auc = f"soft AUC {_one(found['auc'])}; " if found.get("auc") else ""
        print(
            f"  {name:22s} {auc}{objective} {_one(found[objective])}; "
            f"judge yes {found['judge_shares'][1]:.2f}, people {found['human_shares'][1]:.2f}"
        )
    return out


def paired(
    train: list[dict[str, Any]],
    test: list[dict[str, Any]],
    one: tuple[str, ...],
    other: tuple[str, ...],
    human: Callable[[Any], int],
    objective: str,
) -> dict[str, Any]:
    """``one`` minus ``other``, each fitted on ``train`` and measured on ``test``: the soft AUC
    and ``objective`` differences with 95% bootstrap intervals over ``test``'s groups."""
    from localjudge.stats.bootstrap import interval
    from localjudge.stats.cutoffs_fit import _auc

    (obs_1, hard_1), (obs_2, hard_2) = (
        fitted(train, n, human, objective)(test) for n in (one, other)
    )
    by_group: dict[str, list[int]] = defaultdict(list)
    for n, o in enumerate(obs_1):
        by_group[o.group].append(n)
    clusters = list(by_group.values())
    people = np.asarray([o.human for o in obs_1])
    soft_1, soft_2 = (np.asarray([o.soft for o in obs]) for obs in (obs_1, obs_2))

    def auc(cs: list[list[int]]) -> float | None:
        picked = [n for c in cs for n in c]
        a, b = _auc(people[picked], soft_1[picked]), _auc(people[picked], soft_2[picked])
        return None if a is None or b is None else a - b

    def figure(cs: list[list[int]]) -> float | None:
        picked = [n for c in cs for n in c]
        pick = [obs_1[n] for n in picked]
        return score(pick, [hard_1[n] for n in picked], objective) - score(
            pick, [hard_2[n] for n in picked], objective
        )

    return {
        "auc": {"value": auc(clusters), "ci95": interval(clusters, auc)},
        objective: {"value": figure(clusters), "ci95": interval(clusters, figure)},
    }


def choose_then_report(
    rows: list[dict[str, Any]],
    choice: list[dict[str, Any]],
    pools: dict[str, list[dict[str, Any]]],
    candidates: dict[str, tuple[str, ...]],
    human: Callable[[Any], int],
    objective: str,
    seed: str,
) -> dict[str, Any]:
    """The whole rule of a reading benchmark: halves by the sha256 of the ``rows``' ids; the
    choice (:func:`choose`) on ``choice``'s rows in half A; then each of ``pools`` fitted on
    its rows in A and reported (:func:`report`) on those in B. Printed as it goes."""
    from fit_combinations import halves

    a, _ = halves(sorted({r["id"] for r in rows}))
    picked = [r for r in choice if r["id"] in a]
    chosen, means = choose(picked, candidates, human, objective, seed)
    print(f"choice on A ({len(picked)} decisions, {len({r['id'] for r in picked})} groups):")
    for c, m in means.items():
        print(f"  {c:18s} mean {objective} {m:.3f}")
    print(f"  chosen: {chosen}")
    out: dict[str, Any] = {"choice": means, "chosen": chosen}
    for label, pool in pools.items():
        train = [r for r in pool if r["id"] in a]
        test = [r for r in pool if r["id"] not in a]
        n = len({r["id"] for r in test})
        print(f"report on B, {label} ({len(test)} decisions, {n} groups):")
        out[label] = report(train, test, candidates, human, objective)
    return out


def command_line(doc: str, smoke: str) -> tuple[argparse.ArgumentParser, Any, Any, Any]:
    """A reading benchmark's command line: the parser, its subcommands, and ``judge`` (the
    judge's options, ``--out``, ``--limit``: ``smoke``) and ``report`` (the rows, ``--json``)
    for the script to add its own arguments to."""
    parser = argparse.ArgumentParser(description=doc.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge")
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    j.add_argument("--cache", default=None)
    j.add_argument("--out", type=Path, required=True)
    j.add_argument("--limit", action="store_true", help=f"a smoke test: {smoke}")
    r = sub.add_parser("report")
    r.add_argument("rows", type=Path)
    r.add_argument("--json", type=Path, help="write the figures here")
    return parser, sub, j, r
