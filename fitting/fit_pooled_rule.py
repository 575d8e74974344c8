"""The rule of ``fit_pooled.py`` (its docstring states it): pure functions of the judged rows,
so the figures repeat exactly."""

from __future__ import annotations

import argparse
import datetime
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from localjudge.decisions import Combination
from localjudge.decisions.fit import Observation, fit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one

import fit_sources_rule as rule
from common import load_rows, rows_digest

#: each kind's sources in this run
SOURCES: dict[str, tuple[str, ...]] = {
    "position.relevant": ("llmjudge", "trulens", "ragbench", "xquad", "xquadshort"),
    "position.relevant_answer": ("xquad", "xquadshort"),
    "relevance.grade": ("llmjudge", "xquad", "xquadshort"),
    "recall.supported": ("wice", "xquadrecall"),
}
GRADE = "relevance.grade"
RECALL = "recall.supported"
#: the grade's obvious shares on A that its constrained cut-offs must reach
ON_A = 0.95
#: LLMJudge's QWK on B a new grade fit may not fall below (the issue's floor)
QWK_FLOOR = 0.347
RECALL_OBVIOUS = 0.95
SCRIPT = "fit_pooled.py"


def conditions(
    rows_b: list[dict[str, Any]], d: rule.Decider, kind: str, graded: bool
) -> dict[str, Any]:
    """A decision's figures on the report rows and the rule's three conditions."""
    readings = rule.reading_values(rows_b, kind)
    hard, neutral = d.hard(readings), rule.neutral(graded).hard(readings)
    per = {
        s: rule.interval_of([rows_b[n] for n in idx], [hard[n] for n in idx], graded, f"{kind}/{s}")
        for s, idx in rule.by_source(rows_b).items()
    }
    found = rule.obvious(rows_b, hard, d.soft(readings), kind)
    if graded:  # the grade's two targets only (obvious() gives position's for yes/no kinds)
        found = {t: f for t, f in found.items() if t in ("answer medium/high", "other none")}
    p = rule.paired(rows_b, hard, neutral, graded, f"paired/{kind}")
    return _verdict(per, found, p)


def _verdict(per: dict[str, Any], found: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    why = rule.conditions_met(found, p)
    return {
        "per_source": per,
        "obvious": found,
        "paired": p,
        "why": why,
        "passes": all(why.values()),
    }


# --------------------------------------------------------------------------- the grade


def _grade_shares(rows: list[dict[str, Any]], hard: list[int]) -> tuple[float, float]:
    answer = [
        h >= 2
        for r, h in zip(rows, hard, strict=True)
        if r["source"] == "xquad" and r["role"] == "answer"
    ]
    other = [
        h == 0
        for r, h in zip(rows, hard, strict=True)
        if r["source"] == "xquad" and r["role"] == "other"
    ]
    return float(np.mean(answer)), float(np.mean(other))


def constrained_grade(rows_a: list[dict[str, Any]]) -> tuple[rule.Decider, dict[str, Any]]:
    """The grade's combination fitted on A and its cut-offs fitted under the obvious shares."""
    base = rule.fitted(rows_a, GRADE, rule.CANDIDATES["judged+question_centred"])
    soft = base.soft(rule.reading_values(rows_a, GRADE))
    c0, c1, c2 = base.cuts
    xq = [(r["role"], s) for r, s in zip(rows_a, soft, strict=True) if r["source"] == "xquad"]
    lows = [c0, *sorted(s + 1e-09 for role, s in xq if role == "other" and c0 <= s < c2)]
    mediums = [c1, *sorted(s for role, s in xq if role == "answer" and s < c1)]
    groups = rule.by_source(rows_a)
    best: tuple[float, tuple[float, ...]] | None = None
    for low in lows:
        for medium in mediums:
            if not low < medium <= c2:
                continue
            cuts = (low, medium, c2)
            hard = [int(np.sum(s >= np.asarray(cuts))) for s in soft]
            answer, other = _grade_shares(rows_a, hard)
            if answer < ON_A or other < ON_A:
                continue
            qwk = [
                rule.source_figure([rows_a[n] for n in idx], [hard[n] for n in idx], True) or 0.0
                for idx in groups.values()
            ]
            if best is None or float(np.mean(qwk)) > best[0] + 1e-12:
                best = (float(np.mean(qwk)), cuts)
    info = {"fitted cuts": list(base.cuts), "constraint met on A": best is not None}
    if best is None:
        return base, info
    info["mean QWK on A"] = best[0]
    return rule.Decider(True, base.combination, best[1]), info


def decide_grade(rows: list[dict[str, Any]]) -> dict[str, Any]:
    sources = SOURCES[GRADE]
    rows_a, rows_b = (
        rule.rows_of(rows, GRADE, "A", sources),
        rule.rows_of(rows, GRADE, "B", sources),
    )
    d, info = constrained_grade(rows_a)
    out = conditions(rows_b, d, GRADE, True)
    llm = out["per_source"]["llmjudge"]["value"]
    out["why"][f"LLMJudge QWK >= {QWK_FLOOR}"] = llm is not None and llm >= QWK_FLOOR
    out["passes"] = all(out["why"].values())
    out.update(fit=d, info=info)
    return out


# --------------------------------------------------------------------------- recall


def _recall_rows(rows: list[dict[str, Any]], half: str) -> list[dict[str, Any]]:
    # a statement takes its item's label; ``relevant`` is what rule's figures read
    return [dict(r, relevant=r["label"]) for r in rows if "statement" in r and r["half"] == half]


def _items_balanced(rows: list[dict[str, Any]], hard: list[int]) -> float | None:
    per: dict[str, list[int]] = defaultdict(list)
    label = {}
    for r, h in zip(rows, hard, strict=True):
        if r["source"] == "xquadrecall":
            per[r["id"]].append(h)
            label[r["id"]] = r["label"]
    if not per:
        return None
    said = {i: float(np.mean(v)) >= 0.5 for i, v in per.items()}
    rates = [np.mean([said[i] == bool(c) for i in per if label[i] == c]) for c in (0, 1)]
    return float(np.mean(rates))


def recall_decider(cut: float) -> rule.Decider:
    """Recall's decision: the call's P(supported) against ``cut`` (neutral: 0.5)."""
    return rule.Decider(False, None, (cut,), soft=lambda r: r["soft"])


def decide_recall(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows_a, rows_b = _recall_rows(rows, "A"), _recall_rows(rows, "B")
    weighted = rule.weighted(rows_a)
    cut = fit([Observation(r["group"], r["soft"], r["label"]) for r in weighted], graded=False)[0]
    d, neutral = recall_decider(cut), recall_decider(0.5)
    readings = [{"soft": r["soft"]} for r in rows_b]
    hard, base = d.hard(readings), neutral.hard(readings)
    per = {}
    for s, idx in rule.by_source(rows_b).items():
        picked = [rows_b[n] for n in idx]
        per[s] = rule.interval_of(picked, [hard[n] for n in idx], False, f"recall/{s}")
    ba, ba_neutral = _items_balanced(rows_b, hard), _items_balanced(rows_b, base)
    found = {
        "xquad recall balanced accuracy": {
            "value": ba,
            "target": RECALL_OBVIOUS,
            "met": ba is not None and ba >= RECALL_OBVIOUS,
        }
    }
    out = _verdict(per, found, rule.paired(rows_b, hard, base, False, "paired/recall"))
    out.update(fit=d, cut=cut, neutral_balanced=ba_neutral)
    return out


# --------------------------------------------------------------------------- report


def registry_decider(kind: str, model: str | None) -> rule.Decider | None:
    """The fit the registry ships today for ``kind`` (None where it ships none)."""
    from common import entry_tables
    from fit_sources import resolve_sha256

    tables = entry_tables(resolve_sha256(model))
    c = tables["combinations"].get(kind)
    if c is None or kind not in tables["values"]:
        return None
    v = tables["values"][kind]
    cuts = tuple(v) if isinstance(v, list) else (v,)
    graded = rule.KINDS[kind][0]
    return rule.Decider(graded, Combination(c["weights"], tuple(c["intercepts"])), cuts)


def decide_all(rows: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    passages = [r for r in rows if "statement" not in r]
    results: dict[str, Any] = {}
    for kind in ("position.relevant", "position.relevant_answer"):
        result = rule.decide_kind(passages, kind, SOURCES[kind])
        result["kept"] = None
        if not result["ships"]:
            today = registry_decider(kind, model)
            if today is not None:
                rows_b = rule.rows_of(passages, kind, "B", SOURCES[kind])
                result["kept"] = conditions(rows_b, today, kind, False)
        results[kind] = result
    results[GRADE] = decide_grade(passages)
    if any("statement" in r for r in rows):
        results[RECALL] = decide_recall(rows)
    return results


def print_result(kind: str, r: dict[str, Any]) -> None:
    if kind.startswith("position"):
        rule.print_kind(kind, r)
        if r["kept"] is not None:
            k = r["kept"]
            print(f"the registry's fit on the same rows: passes {k['passes']} ({k['why']})")
            print("  " + "; ".join(f"{s} {rule.fmt(f)}" for s, f in k["per_source"].items()))
            print("  missed: " + ", ".join(t for t, f in k["obvious"].items() if not f["met"]))
        return
    print(f"\n## {kind}")
    for key in ("info", "cut", "neutral_balanced"):
        if key in r:
            print(f"{key}: {r[key]}")
    print("on B: " + "; ".join(f"{s} {rule.fmt(f)}" for s, f in r["per_source"].items()))
    for t, f in r["obvious"].items():
        print(f"  {t} (>= {f['target']}): {f['value']:.3f}" + ("" if f["met"] else " ✗"))
    print("minus neutral: " + "; ".join(f"{s} {rule.fmt(v)}" for s, v in r["paired"].items()))
    print(f"passes: {r['passes']} ({r['why']})")


def shipped(
    results: dict[str, Any], model: str | None, keep: Sequence[str] = ()
) -> dict[str, rule.Decider]:
    """The decision each kind ships after the rule (and ``--keep``): its new fit, the
    registry's, or neutral."""
    out = {}
    for kind, r in results.items():
        graded = kind == GRADE
        if r.get("ships", r.get("passes")):
            out[kind] = r["fit"]
        elif kind == RECALL:
            out[kind] = recall_decider(0.5)
        elif (r.get("kept") or {}).get("passes") or kind == GRADE or kind in keep:
            out[kind] = registry_decider(kind, model) or rule.neutral(graded)
        else:
            out[kind] = rule.neutral(graded)
    return out


def print_languages(rows: list[dict[str, Any]], deciders: dict[str, rule.Decider]) -> None:
    """Per language, on the XQuAD report lists, what the shipped decisions answer."""
    cells: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    xq = [r for r in rows if r["source"] == "xquad" and r["half"] == "B" and "judged" in r]
    kind = "position.relevant"
    pos = deciders[kind].hard(rule.reading_values(xq, kind))
    grade = deciders[GRADE].hard(rule.reading_values(xq, GRADE))
    for r, p, g in zip(xq, pos, grade, strict=True):
        for lang in (r["lang"], "all"):
            c = cells[lang]
            c[f"position: {r['role']} " + ("relevant" if r["role"] == "answer" else "not")].append(
                p == int(r["role"] == "answer")
            )
            if r["role"] == "answer":
                c["grade: answer medium/high"].append(g >= 2)
            elif r["role"] == "other":
                c["grade: other none"].append(g == 0)
    rec = [r for r in _recall_rows(rows, "B") if r["source"] == "xquadrecall"]
    hard = deciders[RECALL].hard([{"soft": r["soft"]} for r in rec]) if rec else []
    names = sorted({t for c in cells.values() for t in c})
    print("\n### what ships, per language (XQuAD report lists)\n")
    print("| lang | " + " | ".join(names) + " | recall BA |")
    print("|---|" + "---|" * (len(names) + 1))
    for lang in sorted(cells, key=lambda x: (x == "all", x)):
        c = cells[lang]
        row = [f"{np.mean(c[t]):.2f} ({sum(c[t])}/{len(c[t])})" if c[t] else "-" for t in names]
        ba = _items_balanced(
            rec if lang == "all" else [r for r in rec if r["lang"] == lang],
            hard
            if lang == "all"
            else [h for r, h in zip(rec, hard, strict=True) if r["lang"] == lang],
        )
        print(f"| {lang} | " + " | ".join(row) + f" | {'-' if ba is None else f'{ba:.2f}'} |")


def report_command(args: argparse.Namespace) -> None:
    rows = [r for folder in args.rows for r in load_rows(folder)]
    results = decide_all(rows, args.model)
    for kind, result in results.items():
        print_result(kind, result)
    if RECALL in results:
        print_languages(rows, shipped(results, args.model, args.keep))
    if args.write:
        write(results, args.model, rows_digest(*args.rows), args.keep)


def write(
    results: dict[str, Any], model: str | None, digest: str, keep: Sequence[str] = ()
) -> None:
    """Store what the rule ships; a kind whose new fit fails keeps what the rule keeps.

    ``keep``: kinds whose shipped decision stays though the rule would replace it (by hand,
    ``--keep``); their registry entry records the rule's verdict beside the evidence it
    shipped on (:func:`_record_kept`)."""
    import fit_sources as fs

    passing = {k: r for k, r in results.items() if k.startswith("position") and r["ships"]}
    if passing:
        fs.write(passing, model, digest, SCRIPT)
    for kind in (k for k, r in results.items() if k.startswith("position") and not r["ships"]):
        if kind in keep:
            _record_kept(kind, results[kind], model, digest)
        elif results[kind]["kept"] is None or not results[kind]["kept"]["passes"]:
            fs.write({kind: results[kind]}, model, digest, SCRIPT)  # the neutral cut-off
    _write_other(results, model, digest)


def _record_kept(kind: str, r: dict[str, Any], model: str | None, digest: str) -> None:
    """The kind's shipped fit stays; its ``sources`` entry gains this rule's verdict on it."""
    from common import REGISTRY, entry_tables, write_cutoffs
    from fit_sources import resolve_sha256

    sha256 = resolve_sha256(model)
    tables = entry_tables(sha256)
    kept = r["kept"]
    tables["sources"][kind]["heldout"]["fit_pooled"] = {
        "rule": f"fitting/{SCRIPT}",
        "passes": kept["passes"],
        "why": kept["why"],
        "kept_by_hand": "the rule falls back to the neutral cut-off, which fails the obvious "
        "targets this fit meets (issue 'Verdicts that pass the obvious'); the paired lower "
        "bound below -0.02 is on: "
        + ", ".join(
            f"{s} (point {v['value']:+.3f}, {v['ci95'][0]:+.3f} to {v['ci95'][1]:+.3f})"
            for s, v in kept["paired"].items()
            if s != "pooled" and v["ci95"] is not None and v["ci95"][0] < rule.NO_WORSE
        ),
        "per_source_B": {s: f["value"] for s, f in kept["per_source"].items()},
        "difference_per_source": kept["paired"],
        "obvious_B": {t: f["value"] for t, f in kept["obvious"].items()},
        "new_fit_why": r["why"],
        "rows_sha256": digest,
    }
    write_cutoffs(REGISTRY, sha256, tables)
    print(f"registry.json: {sha256[:12]}: {kind} kept by hand; the rule's verdict recorded")


def _write_other(results: dict[str, Any], model: str | None, digest: str) -> None:
    from common import REGISTRY, entry_tables, write_cutoffs
    from fit_sources import resolve_sha256

    from localjudge.decisions import Provenance

    sha256 = resolve_sha256(model)
    tables = entry_tables(sha256)
    date = datetime.date.today().isoformat()
    for kind in (k for k in (GRADE, RECALL) if k in results):
        r = results[kind]
        evidence = {
            "rule": f"fitting/{SCRIPT}",
            "why": r["why"],
            "per_source_B": {s: f["value"] for s, f in r["per_source"].items()},
            "obvious_B": {t: f["value"] for t, f in r["obvious"].items()},
            "against": "the neutral cut-off, paired, pooled over sources",
            "difference": r["paired"]["pooled"]["value"],
            "difference_ci95": r["paired"]["pooled"]["ci95"],
            "difference_per_source": r["paired"],
            "data": "fitted on the A halves of " + ", ".join(SOURCES[kind]) + "; measured on B",
        }
        if not r["passes"]:
            if kind == RECALL or kind not in tables["values"]:
                tables["not_shipped"][kind] = evidence
            continue  # a grade shipped before stays
        for name in ("values", "combinations", "sources", "not_shipped", "not_combined"):
            tables[name].pop(kind, None)
        d = r["fit"]
        tables["values"][kind] = list(d.cuts) if d.graded else d.cuts[0]
        if d.combination is not None:
            tables["combinations"][kind] = d.combination.as_json()
        tables["sources"][kind] = Provenance("built-in", SCRIPT, digest, date, evidence).as_json()
    write_cutoffs(REGISTRY, sha256, tables)
    print(f"registry.json: {sha256[:12]}: {sorted(tables['values'])}")
