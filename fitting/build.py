"""Build what the bundled judges ship, their cut-offs and combinations, from the committed judged
rows and the committed exceptions: a pure function of those files, loading no judge.

    python fitting/build.py          # writes cutoffs.json and evidence.json (judge/models/)
    python fitting/build.py --check  # exits 1 when the committed files differ from the build

**The rule** (committed before any row it decides was judged). For each judge with rows
(``fitting/rows/JUDGE/``) and each kind of decision, on its sources (``devsets.KIND_SOURCES``):

1. *Choice part only.* Each candidate (:data:`CANDIDATES`: the call's own soft value, or its
   combination with the question reading ``question_centred``; recall: its own soft value) is
   fitted on one half of the choice part's units and measured on the other, and the other way
   round (:func:`localjudge.decisions.fit.split_groups`); the candidate with the best mean
   over sources of the figure (kappa; QWK for the grade) is chosen, a simpler one when within
   :data:`TIE`. It is then fitted on the whole choice part: the combination
   (:func:`localjudge.decisions.combination_fit.fit_combination`) and the cut-offs
   (:func:`localjudge.decisions.fit.fit`; recall for balanced accuracy, the others for kappa).
2. *Validation part only.* Per source, the paired difference of the figure between the fit
   and the neutral cut-offs on the same decisions, with its 95% bootstrap interval over the
   source's units; pooled, the mean over sources, each draw resampling every source's units.
   The obvious targets (:data:`OBVIOUS`) are measured under both.
3. :func:`localjudge.decisions.ship_rule` decides: gain, no source worse, no obvious target
   that the neutral cut-offs meet and the fit misses. A refused kind takes the neutral
   cut-offs, unless ``fitting/exceptions.json`` names it: then its fit ships as an exception,
   with the reason and the date the exception was decided (an exception the rule does not
   need is an error).

A judge without rows takes its entry from ``fitting/replayed.json`` (the registry as it was
before this build existed, its ``built`` line says ``replayed``) until its rows are judged;
then its entry leaves that file. The sealed test part is never read here (``sealed.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import rows as rowsfile
from devsets import KIND_SOURCES

from localjudge.decisions import Combination, Difference, neutral, ship_rule
from localjudge.decisions.combination_fit import Reads, combined_soft, fit_combination
from localjudge.decisions.fit import Observation, fit, hard, split_groups
from localjudge.decisions.shipped import (
    EVIDENCE_PATH,
    SHIPPED_PATH,
    Shipped,
    ShippedJudge,
    ShippedKind,
    dump,
)
from localjudge.stats.agreement import cohen_kappa

ROOT = Path(__file__).resolve().parents[1]
EXCEPTIONS = Path(__file__).resolve().parent / "exceptions.json"
REPLAYED = Path(__file__).resolve().parent / "replayed.json"
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "judged+question_centred": ("judged", "question_centred"),
}
#: a candidate within this of the best, and simpler, is chosen
TIE = 0.02
DRAWS = 2000


def graded(kind: str) -> bool:
    return kind == "relevance.grade"


def figure(kind: str, human: Sequence[int], judged: Sequence[int]) -> float | None:
    """Kappa (yes/no), quadratic-weighted kappa (the grade), balanced accuracy (recall)."""
    if kind == "recall.supported":
        h, j = np.asarray(human), np.asarray(judged)
        rates = [float(np.mean(j[h == c] == c)) for c in (0, 1) if np.any(h == c)]
        return float(np.mean(rates)) if len(rates) == 2 else None
    k = 4 if graded(kind) else 2
    return cohen_kappa(list(human), list(judged), k, quadratic=graded(kind))


# --------------------------------------------------------------------------- a fit


class Fit:
    """A candidate fitted on some rows: its combination (None: the call's own soft value) and
    cut-offs; :meth:`hard` decides rows."""

    def __init__(self, kind: str, names: tuple[str, ...], found: Sequence[dict[str, Any]]):
        self.kind, self.names = kind, names
        self.combination: Combination | None = None
        if names != ("judged",):
            self.combination = fit_combination(reads(found), names, graded=graded(kind))
        objective = "balanced_accuracy" if kind == "recall.supported" else "kappa"
        obs = [
            Observation(r["unit"], s, r["label"])
            for r, s in zip(found, self.soft(found), strict=True)
        ]
        self.cutoffs = fit(obs, graded=graded(kind), objective=objective)

    def soft(self, found: Sequence[dict[str, Any]]) -> list[float]:
        if self.combination is None:
            return [float(r["soft"]) for r in found]
        return combined_soft(self.combination, reads(found), graded=graded(self.kind))

    def hard(self, found: Sequence[dict[str, Any]]) -> list[int]:
        obs = [Observation("", s, 0) for s in self.soft(found)]
        return hard(obs, self.cutoffs, graded=graded(self.kind))


def reads(found: Sequence[dict[str, Any]]) -> list[Reads]:
    return [Reads(r["unit"], r["readings"], r["label"]) for r in found]


def neutral_hard(kind: str, found: Sequence[dict[str, Any]]) -> list[int]:
    obs = [Observation("", float(r["soft"]), 0) for r in found]
    return hard(obs, neutral(graded(kind)), graded=graded(kind))


def usable(kind: str, names: tuple[str, ...], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``kind`` that have every reading ``names`` weighs."""
    return [r for r in found if r["kind"] == kind and all(n in r["readings"] for n in names)]


# --------------------------------------------------------------------------- choice


def choose(kind: str, choice: list[dict[str, Any]]) -> tuple[str, dict[str, float | None]]:
    """The candidate with the best mean over sources of the figure, cross-fitted over the
    choice part's units (see the module's docstring)."""
    scores: dict[str, float | None] = {}
    names_of = {"judged": CANDIDATES["judged"]} if kind == "recall.supported" else CANDIDATES
    for name, names in names_of.items():
        found = usable(kind, names, choice)
        units = [f"{r['source']}/{r['unit']}" for r in found]
        first = split_groups(units, seed=f"choose/{kind}")
        judged = [0] * len(found)
        for inside in (True, False):
            train = [r for r, u in zip(found, units, strict=True) if (u in first) == inside]
            test = [n for n, u in enumerate(units) if (u in first) != inside]
            decided = Fit(kind, names, train).hard([found[n] for n in test])
            for n, j in zip(test, decided, strict=True):
                judged[n] = j
        per = []
        for source in KIND_SOURCES[kind]:
            idx = [n for n, r in enumerate(found) if r["source"] == source]
            per.append(figure(kind, [found[n]["label"] for n in idx], [judged[n] for n in idx]))
        scores[name] = float(np.mean(per)) if per and None not in per else None
    best = max((v for v in scores.values() if v is not None), default=None)
    for name in names_of:  # simplest first
        if best is not None and scores[name] is not None and scores[name] >= best - TIE:  # type: ignore[operator]
            return name, scores
    return "judged", scores


# --------------------------------------------------------------------------- validation


def paired(
    kind: str, found: list[dict[str, Any]], fitted: list[int], base: list[int]
) -> tuple[dict[str, Difference], Difference, dict[str, dict[str, Any]]]:
    """Per source and pooled: the fit's figure minus the neutral one's, with intervals over
    units (every source's units resampled in each draw); and each source's two figures."""
    sources = [s for s in KIND_SOURCES[kind] if any(r["source"] == s for r in found)]
    clusters: dict[str, list[list[int]]] = {}
    for s in sources:
        by_unit: dict[str, list[int]] = {}
        for n, r in enumerate(found):
            if r["source"] == s:
                by_unit.setdefault(r["unit"], []).append(n)
        clusters[s] = list(by_unit.values())

    def diff(picked: list[int]) -> float | None:
        human = [found[n]["label"] for n in picked]
        a = figure(kind, human, [fitted[n] for n in picked])
        b = figure(kind, human, [base[n] for n in picked])
        return None if a is None or b is None else a - b

    rng = np.random.default_rng(int(hashlib.sha256(kind.encode()).hexdigest()[:8], 16))
    draws: dict[str, list[float]] = {s: [] for s in sources}
    pooled: list[float] = []
    for _ in range(DRAWS):
        values = []
        for s in sources:
            cs = clusters[s]
            picked = [n for k in rng.integers(0, len(cs), len(cs)) for n in cs[k]]
            v = diff(picked)
            if v is not None:
                draws[s].append(v)
            values.append(v)
        if None not in values:
            pooled.append(float(np.mean(values)))  # type: ignore[arg-type]
    per: dict[str, Difference] = {}
    figures: dict[str, dict[str, Any]] = {}
    for s in sources:
        idx = [n for cs in clusters[s] for n in cs]
        human = [found[n]["label"] for n in idx]
        per[s] = Difference(diff(idx), ci(draws[s]))
        figures[s] = {
            "fit": figure(kind, human, [fitted[n] for n in idx]),
            "neutral": figure(kind, human, [base[n] for n in idx]),
            "units": len(clusters[s]),
            "decisions": len(idx),
            "difference": per[s].as_json(),
        }
    values = [per[s].value for s in sources]
    mean = float(np.mean(values)) if values and None not in values else None  # type: ignore[arg-type]
    return per, Difference(mean, ci(pooled)), figures


def ci(values: list[float]) -> list[float] | None:
    if len(values) < DRAWS // 2:
        return None
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


#: the obvious targets: (name, source, role, language or None, what counts as right, share)
OBVIOUS: dict[str, list[tuple[str, str, str, str | None, Callable[[int], bool], float]]] = {}


def _targets(kind: str) -> list[tuple[str, str, str, str | None, Callable[[int], bool], float]]:
    yes, no = (lambda j: j == 1), (lambda j: j == 0)
    if kind == "relevance.grade":
        return [
            ("answer medium or high", "xquad", "answer", None, lambda j: j >= 2, 0.90),
            ("other article none", "xquad", "other", None, lambda j: j == 0, 0.90),
        ]
    if kind == "recall.supported":
        return []
    out: list[tuple[str, str, str, str | None, Callable[[int], bool], float]] = [
        ("answer relevant", "xquad", "answer", None, yes, 0.95),
        ("other article not relevant", "xquad", "other", None, no, 0.95),
        ("same article not relevant", "xquad", "same", None, no, 0.80),
        ("short: other article not relevant", "xquadshort", "other", None, no, 0.95),
    ]
    for lang in ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi"):
        out.append((f"answer relevant [{lang}]", "xquad", "answer", lang, yes, 0.80))
        out.append((f"other article not relevant [{lang}]", "xquad", "other", lang, no, 0.80))
    return out


for _kind in KIND_SOURCES:
    OBVIOUS[_kind] = _targets(_kind)


def obvious(kind: str, found: list[dict[str, Any]], judged: list[int]) -> dict[str, Any]:
    """Each obvious target's share under ``judged`` (None where no row counts)."""
    out = {}
    for name, source, role, lang, right, target in OBVIOUS[kind]:
        picked = [
            right(j)
            for r, j in zip(found, judged, strict=True)
            if r["source"] == source and r["role"] == role and lang in (None, r["lang"])
        ]
        share = float(np.mean(picked)) if picked else None
        out[name] = {"share": share, "target": target, "met": share is not None and share >= target}
    return out


# --------------------------------------------------------------------------- a kind, a judge


def build_kind(kind: str, found: list[dict[str, Any]]) -> tuple[ShippedKind, dict[str, Any], Any]:
    """A kind's fit, its rule's verdict and evidence; returns (what ships if the rule holds,
    the evidence, the verdict)."""
    mine = [r for r in found if r["kind"] == kind and r["source"] in KIND_SOURCES[kind]]
    choice = [r for r in mine if r["part"] == "choice"]
    validation = [r for r in mine if r["part"] == "validation"]
    chosen, scores = choose(kind, choice)
    names = CANDIDATES[chosen]
    the_fit = Fit(kind, names, usable(kind, names, choice))
    checked = usable(kind, names, validation)
    fitted, base = the_fit.hard(checked), neutral_hard(kind, checked)
    per, pooled, figures = paired(kind, checked, fitted, base)
    shares_fit, shares_neutral = obvious(kind, checked, fitted), obvious(kind, checked, base)
    lost = [t for t, v in shares_fit.items() if shares_neutral[t]["met"] and not v["met"]]
    verdict = ship_rule(per, pooled, lost)
    shipped = ShippedKind(
        status="fitted",
        cutoffs=list(the_fit.cutoffs),
        combination=None if the_fit.combination is None else the_fit.combination.as_json(),
        why=f"{chosen}; validation pooled difference {fmt(pooled)}; {verdict.line()}",
    )
    evidence = {
        "chosen": chosen,
        "choice_figures": scores,
        "choice": {
            "decisions": len(choice),
            "units": len({(r["source"], r["unit"]) for r in choice}),
        },
        "validation": figures,
        "pooled": pooled.as_json(),
        "obvious": {
            t: {
                "fit": shares_fit[t]["share"],
                "neutral": shares_neutral[t]["share"],
                "target": shares_fit[t]["target"],
            }
            for t in shares_fit
        },
        "obvious_lost": lost,
        "fallback_misses_more": sum(not v["met"] for v in shares_neutral.values())
        > sum(not v["met"] for v in shares_fit.values()),
        "rule": dict(verdict.why),
        "ships": verdict.ship,
    }
    return shipped, evidence, verdict


def fmt(d: Difference) -> str:
    if d.value is None:
        return "none"
    ci_text = "" if d.ci95 is None else f" [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    return f"{d.value:+.3f}{ci_text}"


def build_judge(
    alias: str, meta: dict[str, Any], found: list[dict[str, Any]], exceptions: list[dict[str, Any]]
) -> tuple[ShippedJudge, dict[str, Any]]:
    kinds: dict[str, ShippedKind] = {}
    evidence: dict[str, Any] = {}
    mine = {e["kind"]: e for e in exceptions if e["judge"] == alias}
    for kind in KIND_SOURCES:
        if not any(r["kind"] == kind for r in found):
            continue
        shipped, evidence[kind], verdict = build_kind(kind, found)
        exception = mine.pop(kind, None)
        if verdict.ship:
            if exception is not None:
                raise SystemExit(f"exceptions.json: {alias} {kind} is shipped by the rule; drop it")
            kinds[kind] = shipped
        elif exception is not None:
            update = {"status": "exception", "why": exception_why(exception)}
            kinds[kind] = shipped.model_copy(update=update)
        else:
            kinds[kind] = ShippedKind(status="neutral", why=f"{verdict.line()}; neutral cut-offs")
    if mine:
        raise SystemExit(f"exceptions.json: {alias} has no rows of {sorted(mine)}")
    digest = hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()
    built = f"fitting/build.py from rows {digest[:12]}"
    return ShippedJudge(alias=alias, sha256=meta["sha256"], built=built, kinds=kinds), evidence


def exception_why(exception: dict[str, Any]) -> str:
    """The one line an exception ships with."""
    return f"exception decided {exception['decided']}: {exception['reason']}"


def check_replayed(entry: ShippedJudge, exceptions: list[dict[str, Any]]) -> None:
    """A replayed entry's exceptions are exactly the kinds it ships as exceptions, each with
    the reason of ``exceptions.json``."""
    shipped_as = {k: v.why for k, v in entry.kinds.items() if v.status == "exception"}
    wanted = {e["kind"]: exception_why(e) for e in exceptions}
    if shipped_as != wanted:
        raise SystemExit(f"exceptions.json and {entry.alias}'s replayed entry disagree")


def build(
    rows_root: Path = rowsfile.ROWS,
    exceptions_path: Path = EXCEPTIONS,
    replayed_path: Path | None = REPLAYED,
) -> tuple[Shipped, dict[str, Any]]:
    """What ships and its evidence, from the rows under ``rows_root``, the exceptions and, for
    a judge without rows, its replayed entry."""
    exceptions = json.loads(exceptions_path.read_text("utf-8")) if exceptions_path.is_file() else []
    replayed = (
        json.loads(replayed_path.read_text("utf-8"))
        if replayed_path is not None and replayed_path.is_file()
        else {"judges": [], "evidence": {}}
    )
    judges: list[ShippedJudge] = []
    evidence: dict[str, Any] = {}
    with_rows = rowsfile.judges(rows_root)
    for alias in with_rows:
        meta, found = rowsfile.of_judge(alias, rows_root)
        entry, evidence[alias] = build_judge(alias, meta, found, exceptions)
        judges.append(entry)
    for raw in replayed["judges"]:
        old = ShippedJudge.model_validate(raw)
        if old.alias in with_rows:
            raise SystemExit(f"replayed.json still holds {old.alias}, which has rows: drop it")
        check_replayed(old, [e for e in exceptions if e["judge"] == old.alias])
        judges.append(old)
        evidence[old.alias] = replayed["evidence"].get(old.alias, {})
    unknown = {e["judge"] for e in exceptions} - {j.alias for j in judges}
    if unknown:
        raise SystemExit(f"exceptions.json names judges with no entry: {sorted(unknown)}")
    return Shipped(judges=judges), evidence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    shipped, evidence = build()
    texts = {SHIPPED_PATH: dump(shipped.model_dump(mode="json")), EVIDENCE_PATH: dump(evidence)}
    if args.check:
        stale = [p for p, t in texts.items() if p.read_text("utf-8") != t]
        for p in stale:
            print(f"{p.name} differs from what fitting/build.py makes", file=sys.stderr)
        return 1 if stale else 0
    for p, t in texts.items():
        p.write_text(t, "utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    for j in shipped.judges:
        for kind, k in j.kinds.items():
            print(f"{j.alias:20} {kind:26} {k.status:9} {k.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
