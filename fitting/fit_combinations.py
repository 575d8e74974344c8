"""Fit a judge's combinations of readings for the passage decisions; choose on one half of the
development queries, report on the other, ship what the rule lets through.

    python fitting/convert.py llmjudge --limit 0 --per-query 4 -o /work/runs/dev
    python fitting/fit_combinations.py /work/runs/dev/llmjudge.jsonl [-m qwen2.5-coder-1.5b] \\
        [--cache FILE] [-t 2] [--rows ROWS.json] [--today TODAY.json] [--write]

**Data.** LLMJudge's lists, each query's *distinct* passages once (a passage's decision is the
same in every list it is in). ``position.relevant`` is labelled grade >= 2, ``relevance.grade``
by the grade. **Halves, fixed before anything was measured:** queries sorted by the sha256 of
their qid; the first half (12 of the 25 dev queries) is the *choice half A*, the rest (13) the
*report half B*.

**Judging** (:func:`judge_rows`): per query, the product's own calls (the baseline call, each
passage's position call without an expected answer, its grade call), reasons off, no cut-offs;
each decision keeps its readings: ``judged`` (the call's own soft value: log-odds or expected
grade) and ``question`` (how much better the judge predicts the QUESTION after the passage than
after none). The same function run on an older checkout (``PYTHONPATH=OLD``) gives today's
product on the same passages, hard values by its shipped cut-offs (``--today``).

**Choice, on A only** (rule fixed before A was judged): per kind, the candidates ``judged``,
``question`` and both, each a fitted combination (logistic / proportional odds) followed by
cut-offs fitted on the same part (:func:`localjudge.decisions.fit.fit`); scored by the mean
over 20 random halvings of A's queries (fit on one, measure on the other) of kappa (position) or
QWK (grades). The best wins; a candidate with fewer readings wins ties within 0.02.

**Report, on B only:** every candidate fitted on all of A and measured on B, today's product on
B, and the paired difference chosen minus today (bootstrap over B's queries).

**Shipping** (``--write``): a kind's combination ships when that difference's lower 95% bound
is above 0; it is then refitted on A and B together and stored in ``registry.json`` with its
provenance (the B evidence). Otherwise the combination is listed under ``not_combined`` and the
kind falls back to the standing rule for cut-offs on its call's own soft value in this layout
(what ``fit_cutoffs.py --write`` applies: cut-offs cross-fitted over all the queries against the
baseline, stored when the paired difference's lower bound is above 0), since the cut-offs it
had were fitted on the layout before the readings.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from localjudge import load_judge
from localjudge.decisions import Cutoffs, Provenance, held_out_check, judge_cutoffs
from localjudge.decisions.fit import Observation, agreement, fit, hard
from localjudge.metrics import asks as ask_mod
from localjudge.run.evaluate.grouping import ask_grouped
from localjudge.stats.bootstrap import interval

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one

from common import REGISTRY, entry_tables, half_of, kappa, passage_asks, write_cutoffs

if TYPE_CHECKING:  # an older checkout (today's product, --today) has no combinations
    from localjudge.decisions import Combination

KINDS = {"position.relevant": False, "relevance.grade": True}
#: kinds whose calls share the reading of another kind's: position's EXPECTED ANSWER phrasing
#: reads the same QUESTION after the same PASSAGE (the answer comes after both), so a
#: combination of the question reading alone gives it the same soft value; it is stored for it
#: too, with the evidence of the kind it was measured on (RAGBench, this kind's data, has LLM
#: labels and was not judged for it)
SAME_READING = {"position.relevant_answer": "position.relevant"}
CANDIDATES = {
    "judged": ("judged",),
    "question": ("question",),
    "judged+question": ("judged", "question"),
}
TIE = 0.02
SPLITS = 20
GRADES = {"none": 0, "low": 1, "medium": 2, "high": 3}


# --------------------------------------------------------------------------- data


def by_query(path: Path) -> list[dict[str, Any]]:
    """Each query's distinct passages with their grades, queries in order of first appearance."""
    queries: dict[str, dict[str, Any]] = {}
    for line in path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        qid = str(record["source"]["qid"])
        q = queries.setdefault(qid, {"qid": qid, "question": record["user_input"], "passages": {}})
        for text, level in zip(
            record["retrieved_contexts"], record["labels"]["levels"], strict=True
        ):
            q["passages"].setdefault(text, GRADES[level])
    return list(queries.values())


def halves(qids: list[str]) -> tuple[set[str], set[str]]:
    """The choice half A (the first half of the qids sorted by sha256) and the report half B."""
    half = half_of(qids)
    a = {q for q, h in half.items() if h == "A"}
    return a, set(half) - a


# --------------------------------------------------------------------------- judging


def judge_rows(queries: list[dict[str, Any]], judge: Any) -> list[dict[str, Any]]:
    """One row per passage: its grade and, per kind, the soft value, the readings and the
    product's hard value (the judge's own cut-offs and combinations)."""
    own = judge_cutoffs(judge.identity)
    none = Cutoffs()
    all_asks = [passage_asks(q["question"], list(q["passages"])) for q in queries]
    outcomes = ask_grouped(judge, [[a.request for a in asks] for asks in all_asks])
    rows = []
    for q, asks, gens in zip(queries, all_asks, outcomes, strict=True):
        decide_all = getattr(ask_mod, "decide_all", None)
        if decide_all is not None:
            raw, product = decide_all(asks, gens, none), decide_all(asks, gens, own)
        else:  # an older checkout: one call per decision, no readings
            raw = [ask_mod.decide(a, g, none) for a, g in zip(asks, gens, strict=True)]
            product = [ask_mod.decide(a, g, own) for a, g in zip(asks, gens, strict=True)]
        by_piece: dict[int, dict[str, Any]] = defaultdict(dict)
        for ask, answer, used in zip(asks, raw, product, strict=True):
            if ask.decision is None or getattr(ask, "baseline", False):
                continue
            kind = "relevance.grade" if ask.decision.graded else "position.relevant"
            # an older checkout has no readings: ``judged`` as the product reads it
            judged = {"judged": _judged(answer.soft, ask.decision.graded)}
            readings = dict(getattr(answer, "readings", None) or judged)
            value = used.value
            product_value = int(value) if ask.decision.graded else int(value == "yes")
            by_piece[ask.at][kind] = {
                "soft": answer.soft,
                "readings": readings,
                "product": product_value,
                "product_soft": used.soft,
            }
        for i, (text, grade) in enumerate(q["passages"].items()):
            rows.append(
                {"qid": q["qid"], "piece": i, "grade": grade, "chars": len(text), **by_piece[i]}
            )
    return rows


def _judged(soft: float, graded: bool) -> float:
    if graded:
        return soft
    p = min(max(soft, 1e-12), 1 - 1e-12)
    return float(min(max(np.log(p / (1 - p)), -10.0), 10.0))


# --------------------------------------------------------------------------- fitting


def _reads(rows: list[dict[str, Any]], kind: str) -> list[Any]:
    from localjudge.decisions.combination_fit import Reads

    graded = KINDS[kind]
    return [
        Reads(r["qid"], r[kind]["readings"], r["grade"] if graded else int(r["grade"] >= 2))
        for r in rows
    ]


def fitted(
    rows: list[dict[str, Any]], kind: str, names: tuple[str, ...]
) -> tuple[Combination, tuple[float, ...]]:
    """A combination of ``names`` and its cut-offs, both fitted on ``rows``."""
    from localjudge.decisions.combination_fit import combined_soft, fit_combination

    graded = KINDS[kind]
    reads = _reads(rows, kind)
    combination = fit_combination(reads, names, graded=graded)
    soft = combined_soft(combination, reads, graded=graded)
    obs = [Observation(o.group, s, o.human) for o, s in zip(reads, soft, strict=True)]
    return combination, fit(obs, graded=graded)


def observations(
    rows: list[dict[str, Any]], kind: str, combination: Combination
) -> list[Observation]:
    from localjudge.decisions.combination_fit import combined_soft

    reads = _reads(rows, kind)
    soft = combined_soft(combination, reads, graded=KINDS[kind])
    return [Observation(o.group, s, o.human) for o, s in zip(reads, soft, strict=True)]


def figure(kind: str) -> str:
    return "qwk" if KINDS[kind] else "kappa"


def choose(rows_a: list[dict[str, Any]], kind: str) -> tuple[str, dict[str, float]]:
    """The candidate the rule picks on half A, and every candidate's mean score."""
    qids = sorted({r["qid"] for r in rows_a})
    rng = random.Random(f"choose/{kind}")
    scores: dict[str, list[float]] = defaultdict(list)
    for _ in range(SPLITS):
        shuffled = qids[:]
        rng.shuffle(shuffled)
        one = set(shuffled[: len(shuffled) // 2])
        for fit_part in (one, set(qids) - one):
            train = [r for r in rows_a if r["qid"] in fit_part]
            test = [r for r in rows_a if r["qid"] not in fit_part]
            for name, names in CANDIDATES.items():
                combination, cuts = fitted(train, kind, names)
                obs = observations(test, kind, combination)
                value = agreement(obs, cuts, graded=KINDS[kind])[figure(kind)]["value"]
                scores[name].append(value if value is not None else 0.0)
    means = {name: float(np.mean(v)) for name, v in scores.items()}
    best = max(means.values())
    tied = [n for n in CANDIDATES if means[n] >= best - TIE]
    return min(tied, key=lambda n: len(CANDIDATES[n])), means


def paired(
    rows_b: list[dict[str, Any]], kind: str, chosen: list[int], today: list[int]
) -> dict[str, Any]:
    """Chosen minus today's figure on B, with a bootstrap interval over queries."""
    graded = KINDS[kind]
    by_q: dict[str, list[int]] = defaultdict(list)
    for n, r in enumerate(rows_b):
        by_q[r["qid"]].append(n)
    clusters = list(by_q.values())
    human = [r["grade"] if graded else int(r["grade"] >= 2) for r in rows_b]

    def diff(cs: list[list[int]]) -> float | None:
        picked = [n for c in cs for n in c]
        a = kappa([human[n] for n in picked], [chosen[n] for n in picked], graded)
        b = kappa([human[n] for n in picked], [today[n] for n in picked], graded)
        return None if a is None or b is None else a - b

    return {"value": diff(clusters), "ci95": interval(clusters, diff)}


# --------------------------------------------------------------------------- report


def report(
    rows: list[dict[str, Any]], today: list[dict[str, Any]] | None, kind: str, a: set[str]
) -> dict[str, Any]:
    graded = KINDS[kind]
    rows_a = [r for r in rows if r["qid"] in a]
    rows_b = [r for r in rows if r["qid"] not in a]
    chosen, means = choose(rows_a, kind)
    print(f"\n## {kind}: choice on A ({len(rows_a)} passages, {_n_queries(rows_a)} queries)")
    for name, mean in means.items():
        print(f"  {name:16s} mean {figure(kind)} over {2 * SPLITS} halvings of A: {mean:.3f}")
    print(f"  chosen: {chosen}")
    print(f"## {kind}: report on B ({len(rows_b)} passages, {_n_queries(rows_b)} queries)")
    hard_b: dict[str, list[int]] = {}
    out: dict[str, Any] = {"chosen": chosen, "choice": means, "B": {}}
    for name, names in CANDIDATES.items():
        combination, cuts = fitted(rows_a, kind, names)
        obs = observations(rows_b, kind, combination)
        found = agreement(obs, cuts, graded=graded)
        hard_b[name] = hard(obs, cuts, graded=graded)
        out["B"][name] = found
        _line(name, found, graded)
    if today is not None:
        by_key = {(t["qid"], t["piece"]): t for t in today}
        todays = [by_key[(r["qid"], r["piece"])][kind] for r in rows_b]
        obs = [
            Observation(r["qid"], t["product_soft"], r["grade"] if graded else int(r["grade"] >= 2))
            for r, t in zip(rows_b, todays, strict=True)
        ]
        # the product's own hard values (its shipped cut-offs), not a re-cut
        today_hard = [t["product"] for t in todays]
        found = _with_hard(obs, today_hard, graded)
        out["B"]["today"] = found
        _line("today (product)", found, graded)
        out["paired"] = paired(rows_b, kind, hard_b[chosen], today_hard)
        p = out["paired"]
        print(f"  chosen - today on B: {p['value']:+.3f} {_ci(p['ci95'])}")
    return out


def _n_queries(rows: list[dict[str, Any]]) -> int:
    return len({r["qid"] for r in rows})


def _with_hard(obs: list[Observation], judged: list[int], graded: bool) -> dict[str, Any]:
    """agreement() of given hard values: cut-offs that reproduce them exactly."""
    shifted = [Observation(o.group, float(j), o.human) for o, j in zip(obs, judged, strict=True)]
    cuts = (0.5, 1.5, 2.5) if graded else (0.5,)
    found = agreement(shifted, cuts, graded=graded)
    if not graded:
        found["auc"] = agreement(obs, None, graded=False)["auc"]
    return found


def _ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "[-]"


def _line(name: str, found: dict[str, Any], graded: bool) -> None:
    keys = ("qwk", "kappa_relevant") if graded else ("kappa", "auc")
    parts = [
        f"{k} {found[k]['value']:.3f} {_ci(found[k]['ci95'])}"
        for k in keys
        if found.get(k) and found[k]["value"] is not None
    ]
    shares = " / ".join(f"{j:.2f}" for j in found["judge_shares"])
    people = " / ".join(f"{h:.2f}" for h in found["human_shares"])
    print(f"  {name:16s} {'; '.join(parts)}; shares judge {shares}, people {people}")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lists", type=Path, help="convert.py llmjudge output")
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--cache", default=None, help="judge-call cache file (default: the user's)")
    parser.add_argument(
        "--rows", type=Path, help="read the judged rows from here when it exists, else write them"
    )
    parser.add_argument(
        "--today", type=Path, help="rows judged by today's product (an older checkout)"
    )
    parser.add_argument(
        "--judge-only", action="store_true", help="judge and write --rows, nothing else"
    )
    parser.add_argument("--half", choices=("A", "B"), help="judge only this half's queries")
    parser.add_argument(
        "--write", action="store_true", help="store what the rule ships in registry.json"
    )
    args = parser.parse_args(argv)
    queries = by_query(args.lists)
    a, b = halves([q["qid"] for q in queries])
    print(f"halves: A {sorted(a)}; B {sorted(b)}")
    judge = None
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text("utf-8"))
    else:
        judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
        started = time.perf_counter()
        if args.half:
            queries = [q for q in queries if (q["qid"] in a) == (args.half == "A")]
        rows = judge_rows(queries, judge)
        print(f"judged {len(rows)} passages in {time.perf_counter() - started:.0f} s")
        if args.rows:
            args.rows.write_text(json.dumps(rows), "utf-8")
    if args.judge_only:
        return
    today = json.loads(args.today.read_text("utf-8")) if args.today else None
    results = {kind: report(rows, today, kind, a) for kind in KINDS}
    if args.write:
        judge = judge or load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
        write(rows, results, judge.identity.sha256, args.lists, a)


def write(
    rows: list[dict[str, Any]], results: dict[str, Any], sha256: str, lists: Path, a: set[str]
) -> None:
    """Store each kind the rule ships, refitted on both halves, with its provenance."""
    shipped = entry_tables(sha256)
    values, sources, combinations = shipped["values"], shipped["sources"], shipped["combinations"]
    not_combined, not_shipped = shipped["not_combined"], shipped["not_shipped"]
    digest = hashlib.sha256(lists.read_bytes()).hexdigest()
    today = datetime.date.today().isoformat()
    for kind, found in results.items():
        chosen = found["chosen"]
        evidence = {
            "figure": figure(kind),
            "readings": list(CANDIDATES[chosen]),
            "value": found["B"][chosen][figure(kind)]["value"],
            "ci95": found["B"][chosen][figure(kind)]["ci95"],
            "current": found["B"].get("today", {}).get(figure(kind), {}).get("value"),
            "difference": found.get("paired", {}).get("value"),
            "difference_ci95": found.get("paired", {}).get("ci95"),
            "decisions": sum(1 for r in rows if r["qid"] not in a),
            "against": "the product before readings (its shipped cut-offs)",
            "data": "LLMJudge dev, each query's distinct passages; chosen on half A "
            "(12 queries), measured on half B (13)",
        }
        ci = evidence["difference_ci95"]
        for table in (values, combinations, sources, not_combined, not_shipped):
            table.pop(kind, None)
        if ci is not None and ci[0] > 0:
            combination, cuts = fitted(rows, kind, CANDIDATES[chosen])
            combinations[kind] = combination.as_json()
            values[kind] = cuts[0] if len(cuts) == 1 else list(cuts)
            sources[kind] = Provenance("built-in", lists.name, digest, today, evidence).as_json()
            continue
        not_combined[kind] = evidence
        cuts_now, check = own_cutoffs(rows, kind)
        if cuts_now is None:
            not_shipped[kind] = check
            continue
        values[kind] = cuts_now[0] if len(cuts_now) == 1 else list(cuts_now)
        sources[kind] = Provenance("built-in", lists.name, digest, today, check).as_json()
    for kind, like in SAME_READING.items():
        for table in (values, combinations, sources):
            table.pop(kind, None)
        if set(combinations.get(like, {}).get("weights", {})) == {"question"}:
            values[kind], combinations[kind] = values[like], combinations[like]
            measured = {**sources[like]["heldout"], "measured_on_kind": like}
            sources[kind] = {**sources[like], "heldout": measured}
            not_shipped.pop(kind, None)
    Cutoffs.from_json(values, None, combinations)  # refuses anything malformed before writing
    write_cutoffs(REGISTRY, sha256, shipped)
    print(f"registry.json: {sha256[:12]} now combines {sorted(combinations)}")


def own_cutoffs(
    rows: list[dict[str, Any]], kind: str
) -> tuple[tuple[float, ...] | None, dict[str, Any]]:
    """The standing rule for a kind's cut-offs on its call's own soft value (``fit_cutoffs.py``):
    cross-fitted over all the queries against the baseline; the cut-offs fitted on all of them
    (None unless the paired difference's lower bound is above 0) and the evidence."""
    graded = KINDS[kind]
    obs = [
        Observation(r["qid"], r[kind]["soft"], r["grade"] if graded else int(r["grade"] >= 2))
        for r in rows
    ]
    rule = held_out_check(obs, None, graded=graded, objective=figure(kind))
    evidence = {
        **rule.as_json(),
        "readings": ["judged"],
        "data": "LLMJudge dev, each query's distinct passages (25 queries), cross-fitted",
    }
    print(f"  {kind}: its call's own soft value under the cut-off rule: {json.dumps(evidence)}")
    ci = evidence.get("difference_ci95")
    return (fit(obs, graded=graded) if ci and ci[0] > 0 else None), evidence


if __name__ == "__main__":
    main()
