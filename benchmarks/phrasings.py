"""Several phrasings of a passage's decision, each a short tail after the passage's shared
opening: judge them on the development lists, choose on half A, report on half B.

    python benchmarks/phrasings.py judge /work/runs/dev/llmjudge.jsonl -m qwen2.5-coder-1.5b \\
        -t 2 --cache /work/runs/phrasings.sqlite3 --half A --out /work/runs/phrasings-A.json
    python benchmarks/phrasings.py report --rows /work/runs/rows-new.json \\
        --phrasings /work/runs/phrasings-A.json /work/runs/phrasings-B.json \\
        --today /work/runs/rows-today.json

**Phrasings** (:data:`PHRASINGS`), each after the product's PASSAGE-then-QUESTION opening and its
instructions (:data:`~localjudge.metrics.instructions.PASSAGE_SYSTEM`), so a passage is read
once for all of them: other wordings of the yes/no question, the two criteria asked apart (on
the topic; holds the answer), a finer scale (0 to 10, read as its expected value) and the grade
with its definitions listed in the other order (lowest first) in the tail. Each gives one
reading: a yes/no phrasing's log-odds, a graded one's expected value. ``fit_combinations.py``'s
rows give the product's own readings of the same passages (``judged`` per kind, ``question``).

**Rule, fixed before anything here was judged** (:func:`choose`): per kind (position's
``relevant``, relevance's ``grade``), the candidates are every reading alone, all readings
together, and a forward selection (start from nothing; add the reading that lowers the
held-out negative log-likelihood most, over 5 halvings of the rows it is given; stop when
none lowers it by more than :data:`NLL_TIE` per decision); each is a fitted combination
(logistic / proportional odds, ``stats/combination_fit.py``) followed by cut-offs fitted on the
same part, scored by the mean over 20 random halvings of A's queries (fit on one, measure on the
other) of kappa (position) or QWK (grades); the best wins, a candidate with fewer readings wins
ties within :data:`TIE`. The forward selection is itself run on the fit part of each halving, so
its score counts its own choices. The report on B: each candidate fitted on all of A; the
product shipped now (the question reading for position; the grade call's own value for
relevance) and the product before the readings (``--today``) on the same passages; paired
differences, bootstrap over B's queries.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binary_choice import own_reading
from fit_combinations import KINDS, _line, _with_hard, by_query, figure, halves, paired

from localjudge import load_judge
from localjudge.metrics.asks import Decision
from localjudge.metrics.instructions import passage_ask, passage_opening
from localjudge.run.evaluate.grouping import ask_grouped
from localjudge.stats.cutoffs_fit import Observation, hard

YES_NO = ("yes", "no")
#: name: (the tail after the opening, its decision)
PHRASINGS: dict[str, tuple[str, Decision]] = {
    "relevant2": (
        "Is the PASSAGE relevant to the QUESTION? Answer yes or no.",
        Decision("phrasing.relevant2", "relevant", YES_NO),
    ),
    "topic": (
        "Is the PASSAGE about the topic of the QUESTION? Answer yes or no.",
        Decision("phrasing.topic", "on_topic", YES_NO),
    ),
    "answer": (
        "Does the PASSAGE contain the answer to the QUESTION? Answer yes or no.",
        Decision("phrasing.answer", "has_answer", YES_NO),
    ),
    "useful": (
        "Would a person who asked the QUESTION be glad to read this PASSAGE? Answer yes or no.",
        Decision("phrasing.useful", "glad", YES_NO),
    ),
    "scale10": (
        "How well does the PASSAGE answer the QUESTION, from 0 (not at all) to 10 (completely)?",
        Decision("phrasing.scale10", "score", tuple(range(11))),
    ),
    "grade_up": (
        "Grades, lowest first:\n0: nothing to do with the QUESTION.\n1: on the topic, but "
        "does not answer it.\n2: answers it, but the answer is unclear or buried.\n3: "
        "dedicated to the QUESTION, with the exact answer.\nGrade the PASSAGE: 0, 1, 2 or 3?",
        Decision("phrasing.grade_up", "grade", (0, 1, 2, 3)),
    ),
}
TIE = 0.02
SPLITS = 20
#: the forward selection's own halvings of its rows, and the least gain in held-out
#: log-likelihood per decision for which it adds a reading
INNER = 5
NLL_TIE = 0.005


# --------------------------------------------------------------------------- judging


def judge(args: argparse.Namespace) -> None:
    queries = by_query(args.lists)
    a, _ = halves([q["qid"] for q in queries])
    if args.half:
        queries = [q for q in queries if (q["qid"] in a) == (args.half == "A")]
    if args.limit:
        queries = [{**q, "passages": dict(list(q["passages"].items())[:2])} for q in queries][:1]
    judge_ = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    all_asks = []
    for q in queries:
        asks = []
        for i, passage in enumerate(q["passages"]):
            shared = passage_opening(q["question"], passage)
            for tail, decision in PHRASINGS.values():
                asks.append(passage_ask(shared, tail, decision, at=i, explain=False))
        all_asks.append(asks)
    outcomes = ask_grouped(judge_, [[x.request for x in asks] for asks in all_asks])
    rows = []
    for q, asks, gens in zip(queries, all_asks, outcomes, strict=True):
        found: dict[int, dict[str, float]] = defaultdict(dict)
        for name, ask, gen in zip(list(PHRASINGS) * len(q["passages"]), asks, gens, strict=True):
            found[ask.at][name] = own_reading(ask, gen)
        rows += [{"qid": q["qid"], "piece": i, **found[i]} for i in range(len(q["passages"]))]
    args.out.write_text(json.dumps(rows, indent=1), "utf-8")
    print(f"{len(rows)} passages of {len(queries)} queries -> {args.out}")


# --------------------------------------------------------------------------- choosing


def merged(rows_path: Path, phrasing_paths: list[Path]) -> list[dict[str, Any]]:
    """fit_combinations.py's rows with every phrasing's reading added to both kinds' readings
    (``position`` and ``grade``: the two product calls' own)."""
    extra: dict[tuple[str, int], dict[str, float]] = {}
    for path in phrasing_paths:
        for r in json.loads(path.read_text("utf-8")):
            extra.setdefault((r["qid"], r["piece"]), {}).update(
                {k: v for k, v in r.items() if k not in ("qid", "piece")}
            )
    rows = []
    for r in json.loads(rows_path.read_text("utf-8")):
        if (r["qid"], r["piece"]) not in extra:
            continue
        reads = {
            "position": r["position.relevant"]["readings"]["judged"],
            "grade": r["relevance.grade"]["readings"]["judged"],
            "question": r["position.relevant"]["readings"]["question"],
            **extra[(r["qid"], r["piece"])],
        }
        rows.append({**r, "reads": reads})
    return rows


def _fit_score(
    train: list[dict[str, Any]], test: list[dict[str, Any]], kind: str, names: tuple[str, ...]
) -> tuple[float, list[int], list[Observation]]:
    """The combination of ``names`` and its cut-offs fitted on ``train``, applied to ``test``:
    the figure (no interval), the hard values and the observations."""
    from localjudge.stats.combination_fit import Reads, combined_soft, fit_combination
    from localjudge.stats.cutoffs_fit import _statistics, fit

    graded = KINDS[kind]

    def reads(rows: list[dict[str, Any]]) -> list[Any]:
        human = [r["grade"] if graded else int(r["grade"] >= 2) for r in rows]
        return [
            Reads(r["qid"], {n: r["reads"][n] for n in names}, h)
            for r, h in zip(rows, human, strict=True)
        ]

    tr = reads(train)
    combination = fit_combination(tr, names, graded=graded)
    soft_tr = combined_soft(combination, tr, graded=graded)
    fitted = [Observation(o.group, s, o.human) for o, s in zip(tr, soft_tr, strict=True)]
    cuts = fit(fitted, graded=graded)
    te = reads(test)
    soft_te = combined_soft(combination, te, graded=graded)
    obs = [Observation(o.group, s, o.human) for o, s in zip(te, soft_te, strict=True)]
    judged = hard(obs, cuts, graded=graded)
    value = _statistics(graded)[figure(kind)](obs, judged)
    return (value if value is not None else 0.0), judged, obs


def _halvings(rows: list[dict[str, Any]], seed: str) -> list[tuple[list, list]]:
    qids = sorted({r["qid"] for r in rows})
    rng = random.Random(seed)
    out = []
    for _ in range(SPLITS):
        shuffled = qids[:]
        rng.shuffle(shuffled)
        one = set(shuffled[: len(shuffled) // 2])
        out.extend(
            ([r for r in rows if r["qid"] in part], [r for r in rows if r["qid"] not in part])
            for part in (one, set(qids) - one)
        )
    return out


def _nll(
    train: list[dict[str, Any]], test: list[dict[str, Any]], kind: str, names: tuple[str, ...]
) -> float:
    """The mean negative log-likelihood on ``test`` of the combination fitted on ``train``."""
    from localjudge.stats.combination_fit import Reads, fit_combination

    graded = KINDS[kind]

    def human(r: dict[str, Any]) -> int:
        return int(r["grade"]) if graded else int(r["grade"] >= 2)

    tr = [Reads(r["qid"], {n: r["reads"][n] for n in names}, human(r)) for r in train]
    combination = fit_combination(tr, names, graded=graded)
    total = 0.0
    for r in test:
        probs = combination.probs({n: r["reads"][n] for n in names})
        assert probs is not None
        p = probs[human(r)] if graded else (probs[0] if human(r) else 1.0 - probs[0])
        total -= float(np.log(max(p, 1e-12)))
    return total / len(test)


def forward(rows: list[dict[str, Any]], kind: str, names: list[str]) -> tuple[str, ...]:
    """Forward selection on ``rows`` alone, by the held-out likelihood over its own
    :data:`INNER` halvings: add the reading that lowers it most, while it lowers it by more
    than :data:`NLL_TIE` per decision."""
    chosen: tuple[str, ...] = ()
    best = float("inf")
    splits = _halvings(rows, f"forward/{kind}/{len(rows)}")[:INNER]
    while True:
        scores = {
            n: float(np.mean([_nll(tr, te, kind, (*chosen, n)) for tr, te in splits]))
            for n in names
            if n not in chosen
        }
        if not scores:
            return chosen
        n, s = min(scores.items(), key=lambda x: x[1])
        if chosen and s >= best - NLL_TIE:
            return chosen
        chosen, best = (*chosen, n), s


def _choice(
    rows_a: list[dict[str, Any]],
    kind: str,
    candidates: dict[str, tuple[str, ...] | None],
    names: list[str],
) -> dict[str, float]:
    """Each candidate's mean figure over the halvings of A (the forward selection run inside
    each)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for train, test in _halvings(rows_a, f"choose/{kind}"):
        for cname, fixed in candidates.items():
            cnames = fixed if fixed is not None else forward(train, kind, names)
            scores[cname].append(_fit_score(train, test, kind, cnames)[0])
    return {c: float(np.mean(v)) for c, v in scores.items()}


def report(args: argparse.Namespace) -> None:
    rows = merged(args.rows, args.phrasings)
    # halves are those of all 25 dev queries (fit_combinations.halves on the lists' qids)
    all_q = sorted({r["qid"] for r in json.loads(args.rows.read_text("utf-8"))})
    a, _ = halves(all_q)
    rows_a = [r for r in rows if r["qid"] in a]
    rows_b = [r for r in rows if r["qid"] not in a]
    names = list(rows[0]["reads"])
    today = None
    if args.today:
        today = {(t["qid"], t["piece"]): t for t in json.loads(args.today.read_text("utf-8"))}
    out: dict[str, Any] = {k: {} for k in KINDS}
    # the choice of an earlier run of this command (--json), on the same rows of A
    choice = json.loads(args.choice.read_text("utf-8")) if args.choice else None
    for kind in KINDS:
        own = "position" if kind == "position.relevant" else "grade"
        shipped = ("question",) if kind == "position.relevant" else (own,)
        candidates: dict[str, tuple[str, ...] | None] = {n: (n,) for n in names}
        candidates["question+" + own] = ("question", own)
        candidates["all"] = tuple(names)
        candidates["forward"] = None
        means = choice[kind]["choice"] if choice else _choice(rows_a, kind, candidates, names)
        best = max(means.values())
        size = {c: (len(v) if v else len(names)) for c, v in candidates.items()}
        chosen = min((c for c in means if means[c] >= best - TIE), key=lambda c: size[c])
        print(
            f"\n## {kind}: choice on A ({len(rows_a)} passages); mean {figure(kind)}, "
            f"{2 * SPLITS} halvings"
        )
        for c, m in sorted(means.items(), key=lambda x: -x[1]):
            print(f"  {c:22s} {m:.3f}")
        print(f"  chosen: {chosen}")
        # the forward selection on all of A, run once: the chosen readings if it wins, and
        # its row on B
        on_a = forward(rows_a, kind, names)
        final_names = candidates[chosen] or on_a
        print(f"  its readings (fit on all of A): {final_names}")
        out[kind].update({"choice": means, "chosen": chosen, "readings": list(final_names)})
        if not rows_b:
            continue  # B not judged yet: the choice alone
        print(f"## {kind}: report on B ({len(rows_b)} passages)")
        hard_b = {}
        for cname, cnames in {
            **candidates,
            "forward": on_a,
            "shipped now": shipped,
        }.items():
            _, hb, obs = _fit_score(rows_a, rows_b, kind, cnames or ())
            hard_b[cname] = hb
            found = _with_hard(obs, hb, KINDS[kind])
            _line(cname, found, KINDS[kind])
            out.setdefault(kind, {}).setdefault("B", {})[cname] = found
        for against, label in (("shipped now", "the product now"),):
            p = paired(rows_b, kind, hard_b[chosen], hard_b[against])
            print(f"  chosen - {label}: {p['value']:+.3f} {p['ci95']}")
            out[kind]["vs_now"] = p
        if today is not None:
            before = [today[(r["qid"], r["piece"])][kind]["product"] for r in rows_b]
            soft = [today[(r["qid"], r["piece"])][kind]["product_soft"] for r in rows_b]
            obs = [
                Observation(r["qid"], v, r["grade"] if KINDS[kind] else int(r["grade"] >= 2))
                for r, v in zip(rows_b, soft, strict=True)
            ]
            _line("before readings", _with_hard(obs, before, KINDS[kind]), KINDS[kind])
            p = paired(rows_b, kind, hard_b[chosen], before)
            print(f"  chosen - the product before readings: {p['value']:+.3f} {p['ci95']}")
            out[kind]["vs_before"] = p
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge")
    j.add_argument("lists", type=Path)
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    j.add_argument("--cache", default=None)
    j.add_argument("--half", choices=("A", "B"))
    j.add_argument("--out", type=Path, required=True)
    j.add_argument("--limit", action="store_true", help="a smoke test: two passages")
    r = sub.add_parser("report")
    r.add_argument("--rows", type=Path, required=True)
    r.add_argument("--phrasings", type=Path, nargs="+", required=True)
    r.add_argument("--today", type=Path)
    r.add_argument("--json", type=Path, help="write the figures here")
    r.add_argument("--choice", type=Path, help="an earlier --json: its choice on A, not redone")
    args = parser.parse_args()
    judge(args) if args.command == "judge" else report(args)


if __name__ == "__main__":
    main()
