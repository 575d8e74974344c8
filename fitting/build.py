"""Build what the bundled judges ship, their cut-offs and combinations, from the committed judged
rows and the committed exceptions: a pure function of those files, loading no judge.

    python fitting/build.py          # writes judge/models/cutoffs.json and fitting/evidence.json
    python fitting/build.py --check  # exits 1 when the committed files differ from the build
    python fitting/build.py --against OLD/cutoffs.json  # also the validation figures, before/after

It also writes the table "What ships, as built" of ``docs/figures.md``.

**The rule** (committed before any row it decides was judged). For each judge with rows
(``fitting/rows/JUDGE/``) and each kind of decision, on its sources (``devsets.KIND_SOURCES``):

1. *Choice part only.* Each candidate (:data:`CANDIDATES`: the call's own soft value, or its
   combination with the question readings ``question`` and ``question_alone``, neither of which
   reads a passage's neighbours; recall: its own soft value) is
   fitted on one half of the choice part's units and measured on the other, and the other way
   round (:func:`localjudge.decisions.fit.split_groups`); the candidate with the best mean
   over sources of the figure (kappa; QWK for the grade) is chosen, a simpler one when within
   :data:`TIE`. It is then fitted on the whole choice part: the combination
   (:func:`localjudge.decisions.combination_fit.fit_combination`) and the cut-offs
   (:func:`localjudge.decisions.fit.fit`; recall for balanced accuracy, the others for kappa).
2. *Validation part only.* Per source, the paired difference of the figure between the fit
   and the neutral cut-offs on the same decisions, with its 95% bootstrap interval over the
   source's units; pooled, the mean over sources, each draw resampling every source's units.
   The role targets (:data:`localjudge.decisions.role_targets.TARGETS`) are measured under both.
3. :func:`localjudge.decisions.ship_rule` decides: gain, no source worse, no group of role
   targets that the neutral cut-offs meet and the fit misses (a group, the targets of the
   passages that answer with those of the passages that do not, is met only whole: a verdict
   that says "relevant" to everything meets no group). A refused kind takes the neutral
   cut-offs, unless ``fitting/exceptions.json`` names it: then its fit ships as an exception,
   with the reason and the date the exception was decided (an exception the rule does not
   need is an error).

Every bundled judge is built from its rows; none is carried over from an earlier release. Its
entry and its evidence record the protocol its rows were judged under (``judge.json``); rows
of a protocol this release does not know are refused (``row_files.py``). The sealed test part is
never read here (``sealed.py``), but for ``--check``'s comparison of two cut-off files'
decisions on its rows (no label, no figure).

**Precision: the same files on every machine.** Every float the build writes, fitted (weights,
intercepts, cut-offs) or measured (kappas, differences, intervals, shares), is rounded to
:data:`DECIMALS` (6) decimal places, inside the build: a combination's weights and intercepts
are rounded as soon as they are fitted, the cut-offs are fitted on the soft values of the
rounded combination and then rounded, and the rule decides on the rounded figures. So what
ships is exactly what the evidence measured, and float noise cannot move what is written:
another CPU's or BLAS's order of sums moves a fitted weight by about 1e-13
(``OPENBLAS_CORETYPE=Prescott``: at most 3.4e-13) and a figure by about 1e-16, while L-BFGS-B
stops (at its default tolerances) 2e-6 to 2e-3 from the converged optimum, so a weight's digits
beyond about the 5th decimal carry no information, and a cut-off's own bootstrap spread over
the choice part's units is 0.002 to 0.25, thousands of times the precision. Six places also
write noise about zero (a kappa's 2.2e-16) as 0.0. A cut-off is rounded to the nearest 6-place
value, else down or up, whichever keeps the decision of every soft value it was fitted on
(``fit`` picks a soft value itself, or that plus 1e-9, so the nearest may cross it), with one
more place at a time only where none of those does (:func:`kept_cutoffs`).

``--check`` passes when the committed files are the build's bytes. Where a value sits within
noise of a rounding boundary, they may differ in a last digit on another machine; then it
passes only if nothing but floats differs (keys, statuses, choices, verdicts, refs, digests
and every other non-float exactly; numbers inside a line of text too, at their own decimals),
no float by more than one unit of its last written digit, and the committed ``cutoffs.json``
and the built one make the same decisions on every committed row of every judge, kind and part
(:func:`check`), which a note on stderr says; else it fails, naming what differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import numpy as np

import row_files as rowsfile
from devsets import KIND_SOURCES, SOURCES
from localjudge.decisions import (
    KINDS,
    Combination,
    Cutoffs,
    Difference,
    Ruling,
    Verdict,
    ruling,
    ship_rule,
)
from localjudge.decisions.combination_fit import Reads, fit_combination
from localjudge.decisions.fit import FIGURES, Observation, figure_of, fit, split_groups
from localjudge.decisions.role_targets import groups_met, target_shares
from localjudge.decisions.shipped import (
    SHIPPED_PATH,
    Shipped,
    ShippedJudge,
    ShippedKind,
    ShippedProtocol,
    dump,
)
from localjudge.errors import ProtocolError

ROOT = Path(__file__).resolve().parents[1]
#: the generated table of docs/figures.md, between these two lines
FIGURES_DOC = ROOT / "docs" / "figures.md"
BEGIN = "<!-- generated by fitting/build.py: do not edit by hand -->"
END = "<!-- end of the generated table -->"
EXCEPTIONS = Path(__file__).resolve().parent / "exceptions.json"
#: the evidence of what ships: read by the build and the docs, never at run time (not package
#: data, so the wheel does not carry it)
EVIDENCE_PATH = Path(__file__).resolve().parent / "evidence.json"
CANDIDATES: dict[str, tuple[str, ...]] = {
    "judged": ("judged",),
    "judged+question": ("judged", "question", "question_alone"),
}
#: a candidate within this of the best, and simpler, is chosen
TIE = 0.02
DRAWS = 2000
#: every float the build writes, fitted or measured, is rounded to this many decimal places
#: (a cut-off takes more only where this many would change a decision it was fitted on)
DECIMALS = 6


def graded(kind: str) -> bool:
    return KINDS[kind].graded


# --------------------------------------------------------------------------- precision


def rounded(x: float, decimals: int = DECIMALS) -> float:
    """``x`` at ``decimals`` places (Python's correctly rounded ``round``), never ``-0.0``."""
    return round(x, decimals) + 0.0


def rounded_json(data: Any) -> Any:
    """``data`` (JSON: dicts, lists, numbers, strings) with every float :func:`rounded`."""
    if isinstance(data, float):
        return rounded(data)
    if isinstance(data, dict):
        return {k: rounded_json(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [rounded_json(v) for v in data]
    return data


def rounded_difference(d: Difference) -> Difference:
    return Difference(
        None if d.value is None else rounded(d.value),
        None if d.ci95 is None else [rounded(x) for x in d.ci95],
    )


def rounded_combination(c: Combination) -> Combination:
    """The combination with its weights and intercepts :func:`rounded` (ascending intercepts
    stay ascending: rounding is monotone)."""
    return Combination(
        {n: rounded(w) for n, w in c.weights.items()}, tuple(rounded(t) for t in c.intercepts)
    )


def kept_cutoffs(cutoffs: Sequence[float], soft: Sequence[float]) -> tuple[float, ...]:
    """Each cut-off at :data:`DECIMALS` places, rounded to the nearest, else down or up,
    whichever keeps the decision of every soft value it was fitted on (``fit`` picks a soft
    value itself, or one plus 1e-9, so the nearest may cross it); at one more place at a time
    where none of the three does (two soft values closer than the precision)."""
    values = np.asarray(soft, dtype=float)
    out = []
    for c in cutoffs:
        side = values >= c
        exact = Decimal(c)
        for decimals in range(DECIMALS, 18):
            step = Decimal(1).scaleb(-decimals)
            tried = (
                rounded(c, decimals),
                float(exact.quantize(step, ROUND_FLOOR)) + 0.0,
                float(exact.quantize(step, ROUND_CEILING)) + 0.0,
            )
            kept = next((t for t in tried if np.array_equal(values >= t, side)), None)
            if kept is not None:
                out.append(kept)
                break
        else:  # pragma: no cover - 17 places hold any double of a cut-off's range
            out.append(float(c))
    if out != sorted(out):  # pragma: no cover - rounding within the kept gaps is monotone
        raise AssertionError(f"cut-offs {list(cutoffs)} rounded out of order: {out}")
    return tuple(out)


# --------------------------------------------------------------------------- a fit


class Fit:
    """A kind's decision over rows: its combination of readings (None: the call's own soft
    value) and cut-offs (None: the neutral ones); :meth:`hard` decides rows as ``eval``
    decides a call (:func:`localjudge.decisions.ruling`, with these as the judge's cut-offs).
    Made by fitting (:meth:`fitted`) or from what ships (:meth:`shipped`)."""

    def __init__(
        self, kind: str, combination: Combination | None, cutoffs: Sequence[float] | None
    ) -> None:
        self.kind, self.combination, self.cutoffs = kind, combination, cutoffs
        # as stored, unchecked: an older entry (--against) may weigh a retired reading
        self.decides = Cutoffs(
            {} if cutoffs is None else {kind: tuple(cutoffs)},
            {},
            {} if combination is None else {kind: combination},
        )

    @classmethod
    def fitted(cls, kind: str, names: tuple[str, ...], found: Sequence[dict[str, Any]]) -> Fit:
        """The combination of ``names`` (none for the call's own value alone) and the cut-offs
        fitted on ``found``, for the kind's figure."""
        combination = None
        if names != ("judged",):  # rounded first: the cut-offs are fitted on what ships
            fitted = fit_combination(reads(found), names, graded=graded(kind))
            combination = rounded_combination(fitted)
        soft = cls(kind, combination, None).soft(found)
        obs = [Observation(r["unit"], s, r["label"]) for r, s in zip(found, soft, strict=True)]
        objective = FIGURES.get(kind, "kappa")  # a graded kind's fit has one objective
        cutoffs = fit(obs, graded=graded(kind), objective=objective)
        return cls(kind, combination, kept_cutoffs(cutoffs, soft))

    @classmethod
    def shipped(cls, kind: str, k: ShippedKind) -> Fit:
        """What ``k`` ships (a neutral kind: the call's own value against neutral cut-offs)."""
        if k.status == "neutral":
            return cls(kind, None, None)
        combination = None
        if k.combination is not None:  # as stored: an older entry may weigh a retired reading
            c = k.combination
            combination = Combination(dict(c.weights), tuple(c.intercepts))
        return cls(kind, combination, k.cutoffs)

    def soft(self, found: Sequence[dict[str, Any]]) -> list[float]:
        """Each row's soft value: the combination's of its readings, else the call's own."""
        return [self._ruling(r).soft for r in found]

    def hard(self, found: Sequence[dict[str, Any]]) -> list[int]:
        """Each row's hard value (0/1, or the grade)."""
        return [self._ruling(r).hard for r in found]

    def _ruling(self, row: dict[str, Any]) -> Ruling:
        made = ruling(self.kind, float(row["soft"]), row["readings"], self.decides)
        if self.combination is not None and made.combined is None:  # usable() keeps none such
            raise ValueError(f"row {row['id']} lacks a reading the combination weighs")
        return made


def reads(found: Sequence[dict[str, Any]]) -> list[Reads]:
    return [Reads(r["unit"], r["readings"], r["label"]) for r in found]


def units(found: Sequence[dict[str, Any]]) -> list[list[int]]:
    """The indices of ``found`` per unit, units in order of first appearance (what the
    bootstrap resamples)."""
    by_unit: dict[str, list[int]] = {}
    for n, r in enumerate(found):
        by_unit.setdefault(r["unit"], []).append(n)
    return list(by_unit.values())


def usable(kind: str, names: tuple[str, ...], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``kind`` that have every reading ``names`` weighs."""
    return [r for r in found if r["kind"] == kind and all(n in r["readings"] for n in names)]


#: the readings a protocol-2 support decision takes from its passage's reading under SYSTEM
PASSAGE_READINGS = ("question", "question_alone")


def with_passage_readings(found: list[dict[str, Any]], protocol: str) -> list[dict[str, Any]]:
    """``found`` as the rule reads it under ``protocol``: under protocol 2, each
    ``position.relevant_answer`` row (read after the item's answer, so no QUESTION reading of
    its own) with the QUESTION readings of the same passage's reading under SYSTEM (its
    ``position.relevant`` row: same source, list and piece), which reads that passage and the
    QUESTION alone (the amendment of ``fitting/README.md``); another protocol's rows as they
    are (each of their decisions reads the QUESTION itself). New row dicts where a reading is
    added; ``found`` is not changed."""
    if protocol != "2":
        return found
    alone = {
        (r["source"], r["id"], r["piece"]): r["readings"]
        for r in found
        if r["kind"] == "position.relevant"
    }
    out = []
    for r in found:
        passage = alone.get((r["source"], r["id"], r["piece"]))
        if r["kind"] != "position.relevant_answer" or passage is None:
            out.append(r)
            continue
        added = {n: passage[n] for n in PASSAGE_READINGS if n in passage}
        out.append({**r, "readings": {**r["readings"], **added}})
    return out


def weighed(*kinds: ShippedKind | None) -> tuple[str, ...]:
    """The readings the shipped ``kinds`` decide from (``judged`` always), sorted: with
    :func:`usable`, the rows each of them can decide."""
    names = {"judged"}
    for k in kinds:
        if k is not None and k.combination is not None:
            names |= set(k.combination.weights)
    return tuple(sorted(names))


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
            decided = Fit.fitted(kind, names, train).hard([found[n] for n in test])
            for n, j in zip(test, decided, strict=True):
                judged[n] = j
        per = []
        for source in KIND_SOURCES[kind]:
            idx = [n for n, r in enumerate(found) if r["source"] == source]
            per.append(figure_of(kind, [found[n]["label"] for n in idx], [judged[n] for n in idx]))
        scores[name] = float(np.mean(per)) if per and None not in per else None
    best = max((v for v in scores.values() if v is not None), default=None)
    for name, score in scores.items():  # simplest first
        if best is not None and score is not None and score >= best - TIE:
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
        idx = [n for n, r in enumerate(found) if r["source"] == s]
        clusters[s] = [[idx[k] for k in unit] for unit in units([found[n] for n in idx])]

    def diff(picked: list[int]) -> float | None:
        human = [found[n]["label"] for n in picked]
        a = figure_of(kind, human, [fitted[n] for n in picked])
        b = figure_of(kind, human, [base[n] for n in picked])
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
            "fit": figure_of(kind, human, [fitted[n] for n in idx]),
            "neutral": figure_of(kind, human, [base[n] for n in idx]),
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


# --------------------------------------------------------------------------- a kind, a judge


def rule_fit(
    kind: str, found: list[dict[str, Any]]
) -> tuple[str, dict[str, float | None], Fit, list[dict[str, Any]], list[dict[str, Any]]]:
    """Step 1 of the rule for ``kind`` on ``found``: the candidate chosen on the choice part
    (:func:`choose`) and its scores, its fit on the whole choice part, the choice part, and the
    validation decisions that fit can decide (every reading it weighs)."""
    mine = [r for r in found if r["kind"] == kind and r["source"] in KIND_SOURCES[kind]]
    choice = [r for r in mine if r["part"] == "choice"]
    chosen, scores = choose(kind, choice)
    names = CANDIDATES[chosen]
    the_fit = Fit.fitted(kind, names, usable(kind, names, choice))
    checked = usable(kind, names, [r for r in mine if r["part"] == "validation"])
    return chosen, scores, the_fit, choice, checked


def build_kind(
    kind: str, found: list[dict[str, Any]], ref: str
) -> tuple[ShippedKind, dict[str, Any], Verdict]:
    """A kind's fit, its rule's verdict and evidence; returns (what ships if the rule holds,
    recorded as ``ref``, the evidence, the verdict)."""
    chosen, scores, the_fit, choice, checked = rule_fit(kind, found)
    fitted, base = the_fit.hard(checked), Fit(kind, None, None).hard(checked)
    per, pooled, figures = paired(kind, checked, fitted, base)
    # the rule decides on the figures as written: float noise below the precision moves none
    per = {s: rounded_difference(d) for s, d in per.items()}
    pooled = rounded_difference(pooled)
    shares_fit = target_shares(kind, checked, fitted)
    shares_neutral = target_shares(kind, checked, base)
    groups_fit, groups_neutral = groups_met(kind, shares_fit), groups_met(kind, shares_neutral)
    lost = [g for g, met in groups_fit.items() if groups_neutral[g] and not met]
    verdict = ship_rule(per, pooled, lost)
    shipped = ShippedKind(
        status="fitted",
        cutoffs=list(the_fit.cutoffs or ()),
        combination=None if the_fit.combination is None else the_fit.combination.as_json(),
        ref=ref,
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
        "groups": {g: {"fit": groups_fit[g], "neutral": groups_neutral[g]} for g in groups_fit},
        "fallback_misses_more": sum(not v["met"] for v in shares_neutral.values())
        > sum(not v["met"] for v in shares_fit.values()),
        "rule": dict(verdict.why),
        "ships": verdict.ship,
    }
    return shipped, rounded_json(evidence), verdict


def rows_digest(found: list[dict[str, Any]]) -> str:
    """The sha256 of a judge's rows (what its entry was built from)."""
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()


def fmt(d: Difference) -> str:
    if d.value is None:
        return "none"
    ci_text = "" if d.ci95 is None else f" [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    return f"{d.value:+.3f}{ci_text}"


def build_judge(
    alias: str, meta: dict[str, Any], found: list[dict[str, Any]], exceptions: list[dict[str, Any]]
) -> tuple[ShippedJudge, dict[str, Any]]:
    found = [r for r in found if r["part"] != "test"]  # the sealed part is never read here
    kinds: dict[str, ShippedKind] = {}
    evidence: dict[str, Any] = {}
    mine = {e["kind"]: e for e in exceptions if e["judge"] == alias}
    digest = rows_digest(found)[:12]
    for kind in KIND_SOURCES:
        if not any(r["kind"] == kind for r in found):
            continue
        shipped, evidence[kind], verdict = build_kind(kind, found, f"built-in:build.py@{digest}")
        exception = mine.pop(kind, None)
        if verdict.ship:
            if exception is not None:
                raise SystemExit(f"exceptions.json: {alias} {kind} is shipped by the rule; drop it")
            kinds[kind] = shipped
        elif exception is not None:
            ref = f"exception:build.py@{digest}"
            update = {"status": "exception", "why": exception_why(exception), "ref": ref}
            kinds[kind] = shipped.model_copy(update=update)
        else:
            kinds[kind] = ShippedKind(status="neutral", why=f"{verdict.line()}; neutral cut-offs")
    if mine:
        raise SystemExit(f"exceptions.json: {alias} has no rows of {sorted(mine)}")
    built = f"fitting/build.py from rows {digest}"
    protocol = ShippedProtocol(**meta["protocol"])  # the rows' (row_files.of_judge checked it)
    entry = ShippedJudge(
        alias=alias, sha256=meta["sha256"], protocol=protocol, built=built, kinds=kinds
    )
    return entry, {"protocol": meta["protocol"], **evidence}


def exception_why(exception: dict[str, Any]) -> str:
    """The one line an exception ships with."""
    return f"exception decided {exception['decided']}: {exception['reason']}"


def build(
    rows_root: Path = rowsfile.ROWS,
    exceptions_path: Path = EXCEPTIONS,
) -> tuple[Shipped, dict[str, Any]]:
    """What ships and its evidence, from the rows under ``rows_root`` and the exceptions."""
    exceptions = json.loads(exceptions_path.read_text("utf-8")) if exceptions_path.is_file() else []
    judges: list[ShippedJudge] = []
    evidence: dict[str, Any] = {}
    with_rows = rowsfile.judges(SOURCES, rows_root)
    for alias in with_rows:
        meta, found = rowsfile.of_judge(alias, rows_root)
        entry, evidence[alias] = build_judge(alias, meta, found, exceptions)
        judges.append(entry)
    unknown = {e["judge"] for e in exceptions} - {j.alias for j in judges}
    if unknown:
        raise SystemExit(f"exceptions.json names judges with no entry: {sorted(unknown)}")
    return Shipped(judges=judges), evidence


def figures_table(shipped: Shipped, evidence: dict[str, Any]) -> str:
    """What ships, per judge and kind, with the rule's headline: the table of docs/figures.md
    that the build writes."""
    lines = [
        BEGIN,
        "",
        "| judge | built | kind | ships | why |",
        "|---|---|---|---|---|",
    ]
    for j in shipped.judges:
        for kind, k in j.kinds.items():
            why = k.why if len(k.why) <= 120 else k.why[:117] + "..."
            lines.append(f"| `{j.alias}` | {j.built} | `{kind}` | {k.status} | {why} |")
    return "\n".join([*lines, "", END])


def against(old: Shipped, new: Shipped) -> str:
    """For each judge built from rows: per kind and source, the validation figure of what
    shipped in ``old`` and of what ships in ``new``, and the paired difference with its interval
    over units; then the role targets under each. The table a change in what ships is
    committed with."""
    lines = [
        "| judge | kind | source | before | after | after - before |",
        "|---|---|---|---|---|---|",
    ]
    for alias in rowsfile.judges(SOURCES):
        was = next((j for j in old.judges if j.alias == alias), None)
        now = next(j for j in new.judges if j.alias == alias)
        found = [r for r in rowsfile.of_judge(alias)[1] if r["part"] == "validation"]
        for kind, k in now.kinds.items():
            before = None if was is None else was.kinds.get(kind)
            if before is None or same(before, k):
                continue
            mine = usable(
                kind, weighed(k, before), [r for r in found if r["source"] in KIND_SOURCES[kind]]
            )
            after_h, before_h = (
                Fit.shipped(kind, k).hard(mine),
                Fit.shipped(kind, before).hard(mine),
            )
            per, pooled, figures = paired(kind, mine, after_h, before_h)
            for source, f in figures.items():
                lines.append(
                    f"| {alias} | {kind} ({before.status} -> {k.status}) | {source} | "
                    f"{value(f['neutral'])} | {value(f['fit'])} | {fmt(per[source])} |"
                )
            lines.append(f"| {alias} | {kind} | pooled | | | {fmt(pooled)} |")
            shares = (target_shares(kind, mine, before_h), target_shares(kind, mine, after_h))
            for t, b in shares[0].items():
                a = shares[1][t]
                lines.append(f"| {alias} | {kind} | {t} | {b['share']:.2f} | {a['share']:.2f} | |")
    return "\n".join(lines)


def same(a: ShippedKind, b: ShippedKind) -> bool:
    """Whether two entries of a kind decide alike (their lines of why aside)."""
    if "neutral" in (a.status, b.status):
        return a.status == b.status
    return (a.cutoffs, a.combination) == (b.cutoffs, b.combination)


# --------------------------------------------------------------------------- the check


def check(
    texts: Mapping[Path, str], shipped_path: Path, built: Shipped, rows_root: Path = rowsfile.ROWS
) -> int:
    """0 when each committed file of ``texts`` is the text the build made, or differs from it
    only within float noise (:func:`differences`) while the committed ``shipped_path`` and
    ``built`` make the same decisions on every row under ``rows_root`` (:func:`same_decisions`);
    then a one-line note on stderr. Else 1, naming what differs."""
    committed = {p: p.read_text("utf-8") for p in texts}
    stale = [p for p, t in texts.items() if committed[p] != t]
    if not stale:
        return 0
    problems = []  # the decisions first, then the texts
    try:
        old = Shipped.model_validate_json(committed[shipped_path])
    except ValueError as e:
        problems.append(f"{shipped_path.name}: not a cutoffs.json ({str(e).splitlines()[0]})")
        count = 0
    else:
        count, changed = same_decisions(old, built, rows_root)
        problems += [f"{shipped_path.name}: {c}" for c in changed]
    for p in stale:
        problems += [f"{p.name}: {d}" for d in differences(p.name, committed[p], texts[p])]
    names = ", ".join(p.name for p in stale)
    if problems:
        shown = 20
        for line in problems[:shown]:
            print(line, file=sys.stderr)
        if len(problems) > shown:
            print(f"... and {len(problems) - shown} more", file=sys.stderr)
        print(f"{names}: differ from what fitting/build.py makes", file=sys.stderr)
        return 1
    print(
        f"note: {names} differ from what fitting/build.py makes only in last digits; the "
        f"decisions of the committed and built cutoffs.json on {count} rows are identical",
        file=sys.stderr,
    )
    return 0


#: a number as written in a line of text (not a part of a name or digest: "qwen2.5", "6e82")
NUMBER = re.compile(r"(?<![\w.])[+-]?\d+\.\d+(?![\w.])")


def differences(name: str, committed: str, built: str) -> list[str]:
    """Where a committed file differs from the build's text beyond float noise: anything that
    is not a float (keys, statuses, choices, verdicts, refs, digests) differs, or a float by
    more than one unit of its last written digit (at least :data:`DECIMALS` places; a number
    in a text, of its decimals as written). Empty when they agree so."""
    if name.endswith(".json"):
        try:
            a, b = json.loads(committed), json.loads(built)
        except ValueError:
            return ["not JSON"]
        out: list[str] = []
        _walk(a, b, "", out)
        return out
    lines_a, lines_b = committed.splitlines(), built.splitlines()
    if len(lines_a) != len(lines_b):
        return [f"{len(lines_a)} lines, the build's {len(lines_b)}"]
    return [
        f"line {n}: {a!r} against the build's {b!r}"
        for n, (a, b) in enumerate(zip(lines_a, lines_b, strict=True), start=1)
        if not _same_text(a, b)
    ]


def _walk(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            out.append(f"{where or '/'}: keys {list(a)} against the build's {list(b)}")
            return
        for k in a:
            _walk(a[k], b[k], f"{where}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items against the build's {len(b)}")
            return
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{where}[{n}]", out)
    elif type(a) is float and type(b) is float and math.isfinite(a) and math.isfinite(b):
        x, y = Decimal(repr(a)), Decimal(repr(b))
        places = max(DECIMALS, -int(x.as_tuple().exponent), -int(y.as_tuple().exponent))
        if abs(x - y) > Decimal(1).scaleb(-places):
            out.append(f"{where}: {a!r} against the build's {b!r}")
    elif type(a) is not type(b) or (a != b if not isinstance(a, str) else not _same_text(a, b)):
        out.append(f"{where}: {a!r} against the build's {b!r}")


def _same_text(a: str, b: str) -> bool:
    """Whether two lines are the same but for numbers written with the same decimals that
    differ by at most one unit of the last."""
    parts_a, parts_b = NUMBER.split(a), NUMBER.split(b)
    nums_a, nums_b = NUMBER.findall(a), NUMBER.findall(b)
    if parts_a != parts_b or len(nums_a) != len(nums_b):
        return False
    for x, y in zip(nums_a, nums_b, strict=True):
        dx, dy = Decimal(x), Decimal(y)
        if dx.as_tuple().exponent != dy.as_tuple().exponent:
            return False
        if abs(dx - dy) > Decimal(1).scaleb(int(dx.as_tuple().exponent)):
            return False
    return True


def same_decisions(
    old: Shipped, new: Shipped, rows_root: Path = rowsfile.ROWS
) -> tuple[int, list[str]]:
    """How many rows ``old`` and ``new`` both decide, and where they decide otherwise: every
    row under ``rows_root`` of every judge both hold, every kind and part (the sealed test part
    too: this compares two cut-off files' decisions, it reads no label and makes no figure).
    A row lacking a reading a combination weighs is one neither decides."""
    count, changed = 0, []
    for alias in rowsfile.judges(SOURCES, rows_root):
        a = next((j for j in old.judges if j.alias == alias), None)
        b = next((j for j in new.judges if j.alias == alias), None)
        if a is None or b is None:
            continue  # a judge one of them lacks: a difference of keys already
        found = rowsfile.of_judge(alias, rows_root)[1]
        for kind in sorted(set(a.kinds) & set(b.kinds)):
            ka, kb = a.kinds[kind], b.kinds[kind]
            mine = usable(kind, weighed(ka, kb), [r for r in found if r["kind"] == kind])
            was, now = Fit.shipped(kind, ka).hard(mine), Fit.shipped(kind, kb).hard(mine)
            moved = sum(x != y for x, y in zip(was, now, strict=True))
            count += len(mine)
            if moved:
                changed.append(f"{alias} {kind}: {moved} of {len(mine)} rows decided otherwise")
    return count, changed


def value(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def with_table(text: str, table: str) -> str:
    """``text`` (docs/figures.md) with its generated table replaced by ``table``."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + table + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="a cutoffs.json of before: print the validation figures before and after",
    )
    args = parser.parse_args(argv)
    try:
        shipped, evidence = build()
    except ProtocolError as exc:  # rows judged under other prompts: nothing is built
        print(f"build.py: {exc}", file=sys.stderr)
        return 1
    if args.against is not None:
        print(against(Shipped.model_validate_json(args.against.read_text("utf-8")), shipped))
    texts = {
        SHIPPED_PATH: dump(shipped.model_dump(mode="json")),
        EVIDENCE_PATH: dump(evidence),
        FIGURES_DOC: with_table(FIGURES_DOC.read_text("utf-8"), figures_table(shipped, evidence)),
    }
    if args.check:
        return check(texts, SHIPPED_PATH, shipped)
    for p, t in texts.items():
        p.write_text(t, "utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    for j in shipped.judges:
        for kind, k in j.kinds.items():
            print(f"{j.alias:20} {kind:26} {k.status:9} {k.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
