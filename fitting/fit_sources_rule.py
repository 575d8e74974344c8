"""The rule of ``fit_sources.py``: choose on every source's A half, report per source on B,
ship only what passes the obvious targets and every source (its docstring states the rule).

Pure functions of the judged rows (``fit_sources.py judge``), so the figures repeat exactly.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from localjudge.decisions import Combination
from localjudge.decisions.combination_fit import Reads, combined_soft, fit_combination
from localjudge.decisions.fit import Observation, fit, hard

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one

from common import kappa

#: the kinds, whether graded, and the sources each is fitted and reported on
KINDS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "position.relevant": (False, ("llmjudge", "trulens", "xquad", "xquadshort")),
    "position.relevant_answer": (False, ("xquad", "xquadshort")),
    "relevance.grade": (True, ("llmjudge", "xquad", "xquadshort")),
}
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "judged+question_centred": ("judged", "question_centred"),
}
#: what shipped before this rule (registry.json at a041f4a), shown beside the candidates
TODAY_POSITION = Combination({"question": 0.6293599788818388}, (-1.1353993603038017,))
TODAY_POSITION_CUT = 0.37483180166029345
TODAY_GRADE_CUTS = (2.133260422943515, 2.1639906699928786, 2.4561271782454344)
TIE = 0.02
SPLITS = 10
DRAWS = 2000
#: a source's paired difference may not have its lower bound below this
NO_WORSE = -0.02


# --------------------------------------------------------------------------- readings


def reading_values(rows: list[dict[str, Any]], kind: str) -> list[dict[str, float]]:
    """Each row's readings for ``kind`` (see the docstring of ``fit_sources.py``)."""
    by_list: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_list[r["id"]].append(r["q"])
    centre = {k: float(np.mean(v)) for k, v in by_list.items()}
    own = {"position.relevant": "judged", "position.relevant_answer": "answer_judged"}
    out = []
    for r in rows:
        judged = r["grade_soft"] if kind == "relevance.grade" else r[own[kind]]
        out.append(
            {
                "judged": float(judged),
                "question": r["q"] - r["base"],
                "question_centred": r["q"] - centre[r["id"]],
            }
        )
    return out


def label(row: dict[str, Any], graded: bool) -> int:
    return int(row["grade"]) if graded else int(row["relevant"])


# --------------------------------------------------------------------------- a decision rule


class Decider:
    """A candidate: soft values and hard values of rows of one kind."""

    def __init__(
        self,
        graded: bool,
        combination: Combination | None,
        cuts: tuple[float, ...],
        soft: Callable[[dict[str, float]], float] | None = None,
    ) -> None:
        self.graded, self.combination, self.cuts, self._soft = graded, combination, cuts, soft

    def soft(self, readings: Sequence[dict[str, float]]) -> list[float]:
        if self._soft is not None:
            return [self._soft(r) for r in readings]
        assert self.combination is not None
        reads = [Reads("", r, 0) for r in readings]
        return combined_soft(self.combination, reads, graded=self.graded)

    def hard(self, readings: Sequence[dict[str, float]]) -> list[int]:
        obs = [Observation("", s, 0) for s in self.soft(readings)]
        return hard(obs, self.cuts, graded=self.graded)


def neutral(graded: bool) -> Decider:
    """The call's own soft value against the larger probability."""
    if graded:
        return Decider(True, None, (0.5, 1.5, 2.5), soft=lambda r: r["judged"])
    return Decider(False, None, (0.5,), soft=lambda r: _sigmoid(r["judged"]))


def today(kind: str) -> Decider:
    if kind == "relevance.grade":
        return Decider(True, None, TODAY_GRADE_CUTS, soft=lambda r: r["judged"])
    return Decider(False, TODAY_POSITION, (TODAY_POSITION_CUT,))


def _sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


def weighted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with each source repeated to the largest source's count (each source weighs the
    same in a fit)."""
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["source"]] += 1
    top = max(counts.values())
    return [r for r in rows for _ in range(max(1, round(top / counts[r["source"]])))]


def fitted(rows: list[dict[str, Any]], kind: str, names: tuple[str, ...]) -> Decider:
    """The combination of ``names`` and its cut-offs, both fitted on ``rows`` (sources weighed
    alike)."""
    graded = KINDS[kind][0]
    rows = weighted(rows)
    readings = reading_values(rows, kind)
    reads = [Reads(r["group"], x, label(r, graded)) for r, x in zip(rows, readings, strict=True)]
    combination = fit_combination(reads, names, graded=graded)
    soft = combined_soft(combination, reads, graded=graded)
    obs = [Observation(o.group, s, o.human) for o, s in zip(reads, soft, strict=True)]
    cuts = fit(obs, graded=graded, objective="qwk" if graded else "kappa")
    return Decider(graded, combination, cuts)


# --------------------------------------------------------------------------- figures


def source_figure(rows: list[dict[str, Any]], judged: list[int], graded: bool) -> float | None:
    return kappa([label(r, graded) for r in rows], judged, graded)


def by_source(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for n, r in enumerate(rows):
        out[r["source"]].append(n)
    return out


def paired(
    rows: list[dict[str, Any]], a: list[int], b: list[int], graded: bool, seed: str
) -> dict[str, Any]:
    """Per source and pooled (the mean over sources): figure(a) - figure(b), with bootstrap
    intervals over each source's groups."""
    sources = by_source(rows)
    clusters = {
        s: list(_groups([rows[n] for n in idx], idx).values()) for s, idx in sources.items()
    }

    def diff(picked: list[int]) -> float | None:
        fa = source_figure([rows[n] for n in picked], [a[n] for n in picked], graded)
        fb = source_figure([rows[n] for n in picked], [b[n] for n in picked], graded)
        return None if fa is None or fb is None else fa - fb

    rng = random.Random(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(DRAWS):
        pooled = []
        for s, cs in clusters.items():
            picked = [n for _ in cs for n in cs[rng.randrange(len(cs))]]
            d = diff(picked)
            if d is not None:
                draws[s].append(d)
                pooled.append(d)
        if pooled:
            draws["pooled"].append(float(np.mean(pooled)))
    point = {s: diff(idx) for s, idx in sources.items()}
    values = [v for v in point.values() if v is not None]
    point["pooled"] = float(np.mean(values)) if values else None
    return {
        s: {"value": point[s], "ci95": _ci(draws[s])} for s in [*sources, "pooled"] if s in point
    }


def _groups(rows: list[dict[str, Any]], idx: list[int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for r, n in zip(rows, idx, strict=True):
        out[r["group"]].append(n)
    return out


def _ci(values: list[float]) -> list[float] | None:
    if len(values) < 20:
        return None
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


def interval_of(rows: list[dict[str, Any]], judged: list[int], graded: bool, seed: str) -> Any:
    """A source's figure with its bootstrap interval over groups."""
    clusters = list(_groups(rows, list(range(len(rows)))).values())
    rng = random.Random(seed)
    draws = []
    for _ in range(DRAWS):
        picked = [n for _ in clusters for n in clusters[rng.randrange(len(clusters))]]
        v = source_figure([rows[n] for n in picked], [judged[n] for n in picked], graded)
        if v is not None:
            draws.append(v)
    return {"value": source_figure(rows, judged, graded), "ci95": _ci(draws)}


# --------------------------------------------------------------------------- obvious targets


def obvious(
    rows: list[dict[str, Any]], judged: list[int], soft: list[float], kind: str
) -> dict[str, Any]:
    """The obvious targets' shares on XQuAD rows, and whether each is met."""
    graded = KINDS[kind][0]
    found: dict[str, Any] = {}
    checks: list[tuple[str, float | None, float]] = []

    def share(source: str, role: str, ok: Callable[[int], bool], lang: str | None = None) -> Any:
        picked = [
            judged[n]
            for n, r in enumerate(rows)
            if r["source"] == source and r["role"] == role and (lang is None or r["lang"] == lang)
        ]
        return float(np.mean([ok(j) for j in picked])) if picked else None

    if graded:
        checks.append(("answer medium/high", share("xquad", "answer", lambda j: j >= 2), 0.90))
        checks.append(("other none", share("xquad", "other", lambda j: j == 0), 0.90))
    else:
        yes, no = (lambda j: j == 1), (lambda j: j == 0)
        checks.append(("answer relevant", share("xquad", "answer", yes), 0.95))
        checks.append(("other not relevant", share("xquad", "other", no), 0.95))
        checks.append(("same not relevant", share("xquad", "same", no), 0.80))
        langs = sorted({r["lang"] for r in rows if r["source"] == "xquad"})
        for lang in langs:
            checks.append((f"answer relevant [{lang}]", share("xquad", "answer", yes, lang), 0.90))
            checks.append((f"other not relevant [{lang}]", share("xquad", "other", no, lang), 0.90))
        checks.append(("short: other not relevant", share("xquadshort", "other", no), 0.95))
        checks.append(("short: answer above other", _above(rows, soft), 0.95))
    for name, value, target in checks:
        found[name] = {
            "value": value,
            "target": target,
            "met": value is not None and value >= target,
        }
    return found


def _above(rows: list[dict[str, Any]], soft: list[float]) -> float | None:
    """In the short lists, the share whose answer sentence's soft value is above another
    article's sentence's."""
    per: dict[str, dict[str, float]] = defaultdict(dict)
    for n, r in enumerate(rows):
        if r["source"] == "xquadshort":
            per[r["id"]][r["role"]] = soft[n]
    pairs = [p for p in per.values() if "answer" in p and "other" in p]
    return float(np.mean([p["answer"] > p["other"] for p in pairs])) if pairs else None


# --------------------------------------------------------------------------- the rule


def rows_of(
    rows: list[dict[str, Any]], kind: str, half: str, sources: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The rows of ``kind``'s sources (``sources`` in place of :data:`KINDS`'s) in ``half``."""
    sources = sources or KINDS[kind][1]
    need = "answer_judged" if kind == "position.relevant_answer" else "judged"
    graded = KINDS[kind][0]
    return [
        r
        for r in rows
        if r["source"] in sources
        and r["half"] == half
        and need in r
        and (not graded or r["grade"] is not None)
    ]


def choose(rows_a: list[dict[str, Any]], kind: str) -> tuple[str, dict[str, float]]:
    """The candidate with the best mean over sources of the figure on held-out halvings of A."""
    graded = KINDS[kind][0]
    rng = random.Random(f"choose/{kind}")
    scores: dict[str, list[float]] = defaultdict(list)
    groups = sorted({(r["source"], r["group"]) for r in rows_a})
    for _ in range(SPLITS):
        shuffled = groups[:]
        rng.shuffle(shuffled)
        one = set(shuffled[::2])
        for inside in (True, False):
            train = [r for r in rows_a if ((r["source"], r["group"]) in one) == inside]
            test = [r for r in rows_a if ((r["source"], r["group"]) in one) != inside]
            readings = reading_values(test, kind)
            for name, names in CANDIDATES.items():
                judged = fitted(train, kind, names).hard(readings)
                per = [
                    source_figure([test[n] for n in idx], [judged[n] for n in idx], graded)
                    for idx in by_source(test).values()
                ]
                scores[name].append(float(np.mean([v if v is not None else 0.0 for v in per])))
    means = {name: float(np.mean(v)) for name, v in scores.items()}
    best = max(means.values())
    tied = [n for n in CANDIDATES if means[n] >= best - TIE]
    return min(tied, key=lambda n: len(CANDIDATES[n])), means


def decide_kind(
    rows: list[dict[str, Any]], kind: str, sources: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Choose on A, report on B, and say whether the chosen fit ships."""
    graded = KINDS[kind][0]
    rows_a, rows_b = rows_of(rows, kind, "A", sources), rows_of(rows, kind, "B", sources)
    chosen, means = choose(rows_a, kind)
    readings_b = reading_values(rows_b, kind)
    deciders = {name: fitted(rows_a, kind, names) for name, names in CANDIDATES.items()}
    deciders["neutral"] = neutral(graded)
    if kind != "position.relevant_answer":
        deciders["today"] = today(kind)
    out: dict[str, Any] = {"chosen": chosen, "choice": means, "B": {}, "obvious": {}}
    hard_b = {name: d.hard(readings_b) for name, d in deciders.items()}
    for name, d in deciders.items():
        soft = d.soft(readings_b)
        per = {}
        for source, idx in by_source(rows_b).items():
            picked = [rows_b[n] for n in idx]
            per[source] = interval_of(
                picked, [hard_b[name][n] for n in idx], graded, f"{kind}/{name}/{source}"
            )
            per[source]["judge_shares"] = _shares([hard_b[name][n] for n in idx], graded)
            per[source]["human_shares"] = _shares([label(r, graded) for r in picked], graded)
        out["B"][name] = per
        out["obvious"][name] = obvious(rows_b, hard_b[name], soft, kind)
    out["paired"] = paired(rows_b, hard_b[chosen], hard_b["neutral"], graded, f"paired/{kind}")
    out["why"] = conditions_met(out["obvious"][chosen], out["paired"])
    out["ships"] = all(out["why"].values())
    out["fit"] = deciders[chosen]
    return out


def conditions_met(found: dict[str, Any], paired_: dict[str, Any]) -> dict[str, bool]:
    """The rule's three conditions: every obvious target ``found`` met, no source's paired
    difference with a lower bound under :data:`NO_WORSE`, the pooled one's above 0."""
    no_worse = all(
        v["ci95"] is not None and v["ci95"][0] >= NO_WORSE
        for s, v in paired_.items()
        if s != "pooled"
    )
    pooled = paired_["pooled"]["ci95"]
    return {
        "obvious met": all(f["met"] for f in found.values()),
        "no source worse": no_worse,
        "pooled gain": pooled is not None and pooled[0] > 0,
    }


def _shares(values: list[int], graded: bool) -> list[float]:
    k = 4 if graded else 2
    return [float(np.mean([v == g for v in values])) if values else 0.0 for g in range(k)]


# --------------------------------------------------------------------------- report


def fmt(found: dict[str, Any]) -> str:
    v, ci = found["value"], found["ci95"]
    if v is None:
        return "-"
    return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def print_kind(kind: str, result: dict[str, Any]) -> None:
    print(f"\n## {kind}")
    print(
        "choice on A (mean over sources, held-out halvings): "
        + ", ".join(f"{n} {v:.3f}" for n, v in result["choice"].items())
        + f"; chosen: {result['chosen']}"
    )
    print("\n| on B | " + " | ".join(next(iter(result["B"].values()))) + " |")
    print("|---|" + "---|" * len(next(iter(result["B"].values()))))
    for name, per in result["B"].items():
        print(f"| {name} | " + " | ".join(fmt(f) for f in per.values()) + " |")
    print("\nshares (judge / people) on B:")
    for name, per in result["B"].items():
        print(
            f"  {name}: "
            + "; ".join(
                f"{s} "
                + "/".join(f"{x:.2f}" for x in f["judge_shares"])
                + " vs "
                + "/".join(f"{x:.2f}" for x in f["human_shares"])
                for s, f in per.items()
            )
        )
    print("\nobvious targets on B:")
    names = list(result["obvious"])
    print("| target | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for t in result["obvious"][names[0]]:
        cells = []
        for n in names:
            f = result["obvious"][n][t]
            cells.append(
                "-" if f["value"] is None else f"{f['value']:.2f}" + ("" if f["met"] else " ✗")
            )
        print(
            f"| {t} (>= {result['obvious'][names[0]][t]['target']}) | " + " | ".join(cells) + " |"
        )
    print(
        "\nchosen minus neutral on B: "
        + "; ".join(f"{s} {fmt(v)}" for s, v in result["paired"].items())
    )
    print(f"ships: {result['ships']} ({result['why']})")


def report_command(args: argparse.Namespace) -> None:
    rows: list[dict[str, Any]] = []
    for path in sorted(args.rows.glob("*.json")):
        rows += json.loads(path.read_text("utf-8"))
    results = {kind: decide_kind(rows, kind) for kind in KINDS}
    for kind, result in results.items():
        print_kind(kind, result)
    if args.write:
        from fit_sources import write

        write(results, args.model)
