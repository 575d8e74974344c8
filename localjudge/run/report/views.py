"""The views of bench runs and diffs: the parsed ``bench.json`` + ``bench_items.jsonl``
(agreement tables, confusion matrices, the largest disagreements) or a
:func:`localjudge.run.report.diff.diff_runs` document, turned into the context of their
templates. Pure functions of the parsed data; the page machinery is
:mod:`localjudge.run.report.page`, the entry points :mod:`localjudge.run.report.render`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from localjudge.console import is_number
from localjudge.run.report.diff import close_flip_text
from localjudge.run.report.page import (
    CSP_ATTRIBUTE,
    as_text,
    label_text,
    num,
    pair_text,
    script_json,
    text_pairs,
)

#: the largest human-judge disagreements a bench report lists
TOP_DISAGREEMENTS = 20


# --------------------------------------------------------------------------- bench view


def _cell(stat: Any) -> str:
    """``value [low, high]`` of a ``{"value", "ci95"}`` statistic."""
    if not isinstance(stat, Mapping):
        return "–"
    ci = stat.get("ci95")
    text = num(stat.get("value"))
    if isinstance(ci, Sequence) and len(ci) == 2:
        text += f" [{num(ci[0])}, {num(ci[1])}]"
    return text


def _confusion_cells(confusion: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    matrix = [[int(c) for c in row] for row in confusion.get("matrix") or []]
    top = max((c for row in matrix for c in row), default=0)
    return [
        [
            {"count": c, "shade": round(0.55 * c / top, 3) if top else 0.0, "diagonal": i == j}
            for j, c in enumerate(row)
        ]
        for i, row in enumerate(matrix)
    ]


def bench_view(report: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Everything the bench template shows: judges side by side per metric, confusion matrices
    and the items where the judges disagree most with the human labels."""
    judges: Mapping[str, Any] = report.get("judges") or {}
    names = list(judges)
    speed = [
        {
            "name": name,
            "identity": j.get("identity") or {},
            "load_seconds": j.get("load_seconds"),
            "wall_seconds": j.get("wall_seconds"),
            "peak_rss_mb": j.get("peak_rss_mb"),
            "judge_calls": j.get("judge_calls"),
            "cache_hits": j.get("cache_hits"),
        }
        for name, j in judges.items()
    ]
    metrics = []
    for metric in report.get("metrics") or []:
        per = [(judges[n].get("metrics") or {}).get(metric) or {} for n in names]
        keys = list(dict.fromkeys(k for m in per for k in (m.get("verdicts") or {})))
        table: list[tuple[str, list[str]]] = [
            ("items scored", [f"{m.get('n_scored', '–')} of {m.get('n_items', '–')}" for m in per]),
            ("items failed", [str(m.get("n_failed", "–")) for m in per]),
            ("compared (common) items", [str(m.get("n_common", "–")) for m in per]),
        ]
        for key in keys:
            vs = [(m.get("verdicts") or {}).get(key) or {} for m in per]
            weights = next((v["kappa"].get("weights") for v in vs if v.get("kappa")), "none")
            table += [
                (f"{key}: accuracy", [_cell(v.get("accuracy")) for v in vs]),
                (f"{key}: kappa ({weights} weights)", [_cell(v.get("kappa")) for v in vs]),
            ]
        scores = [m.get("scores") or {} for m in per]
        table += [
            ("score Spearman", [_cell(s.get("spearman")) for s in scores]),
            ("score Kendall", [_cell(s.get("kendall")) for s in scores]),
            ("score MAE", [_cell(s.get("mae")) for s in scores]),
        ]
        if any("roc_auc" in s for s in scores):
            table.append(("score ROC AUC", [_cell(s.get("roc_auc")) for s in scores]))
        table += [
            (
                "human mean / judge mean",
                [pair_text(s.get("human_mean"), s.get("judge_mean")) for s in scores],
            ),
            ("seconds / item", [num(m.get("seconds_per_item"), 2) for m in per]),
            ("tokens / s", [num(m.get("tokens_per_s"), 1) for m in per]),
        ]
        failed = [", ".join(as_text(i) for i in m.get("failed_ids") or []) for m in per]
        confusions = [
            {
                "key": key,
                "judges": [
                    {
                        "name": n,
                        "labels": [as_text(label) for label in conf.get("labels") or []],
                        "cells": _confusion_cells(conf),
                    }
                    for n, m in zip(names, per, strict=True)
                    if (conf := ((m.get("verdicts") or {}).get(key) or {}).get("confusion"))
                ],
            }
            for key in keys
        ]
        metrics.append(
            {
                "name": metric,
                "table": table,
                "failed": failed if any(failed) else None,
                "confusions": confusions,
            }
        )
    worst = [r for r in items if is_number(r.get("abs_error")) and r["abs_error"] > 0]
    manifest = [
        ("data", as_text(report.get("data"))),
        ("data sha256", as_text(report.get("data_sha256"))),
        ("labelled items", as_text(report.get("n_labelled"))),
        ("metrics", ", ".join(as_text(m) for m in report.get("metrics") or [])),
        ("judges", ", ".join(names)),
    ]
    return {
        "csp": CSP_ATTRIBUTE,
        "title": f"localjudge bench report: {Path(str(report.get('data') or 'bench')).name}",
        "manifest": manifest,
        "versions": text_pairs(report.get("versions") or {}),
        "judges": names,
        "speed": speed,
        "metrics": metrics,
        "disagreements": [_disagreement(r) for r in worst[:TOP_DISAGREEMENTS]],
        "n_items": len(items),
        "payload": script_json({"judges": names, "metrics": report.get("metrics") or []}),
        "script": None,
    }


def _disagreement(row: Mapping[str, Any]) -> dict[str, Any]:
    labels: Mapping[str, Any] = row.get("labels") or {}
    comparisons = []
    for key, judged in (row.get("judge_verdicts") or {}).items():
        human = labels.get(key)
        if not isinstance(human, list) or not isinstance(judged, list):
            continue
        comparisons.append(
            {
                "key": key,
                "pieces": [
                    {
                        "human": label_text(h),
                        "judge": label_text(j),
                        "match": label_text(h) == label_text(j),
                    }
                    for h, j in zip(human, judged, strict=False)
                ],
            }
        )
    error = row.get("error")
    return {
        "judge": as_text(row.get("judge")),
        "metric": as_text(row.get("metric")),
        "id": as_text(row.get("id")),
        "human_score": row.get("human_score"),
        "judge_score": row.get("judge_score"),
        "abs_error": row.get("abs_error"),
        "comparisons": comparisons,
        "reason": as_text(row.get("reason")),
        "error": as_text(error.get("message")) if isinstance(error, Mapping) else "",
    }


def _decision_text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={label_text(v)}" for k, v in value.items())
    return "–" if value is None else label_text(value)


def diff_view(diff: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the diff template shows."""
    metrics = []
    for name, m in (diff.get("metrics") or {}).items():
        wilcoxon = m.get("wilcoxon") or {}
        p = wilcoxon.get("p_value")
        ci = m.get("ci95")
        metrics.append(
            {
                **{k: m.get(k) for k in ("n_paired", "mean_a", "mean_b", "mean_diff", "ci95")},
                **{k: m.get(k) for k in ("n_improved", "n_worsened", "n_flipped", "n_changed")},
                "n_flipped_close": m.get("n_flipped_close"),
                "name": as_text(name),
                "p_value": f"{p:.3g}" if is_number(p) else "–",
                "worse": isinstance(ci, Sequence)
                and len(ci) == 2
                and is_number(ci[1])
                and ci[1] < 0,
                "scored_only_in_a": [as_text(i) for i in m.get("scored_only_in_a") or []],
                "scored_only_in_b": [as_text(i) for i in m.get("scored_only_in_b") or []],
                "top": [
                    {
                        **{k: it.get(k) for k in ("score_a", "score_b", "delta")},
                        "id": as_text(it.get("id")),
                        "reason_a": as_text(it.get("reason_a")),
                        "reason_b": as_text(it.get("reason_b")),
                        "error_a": as_text(it.get("error_a")),
                        "error_b": as_text(it.get("error_b")),
                        "flipped": [
                            {
                                "piece": f.get("piece"),
                                "a": _decision_text(f.get("a")),
                                "b": _decision_text(f.get("b")),
                                "close": close_flip_text(f) if isinstance(f, Mapping) else "",
                            }
                            for f in it.get("flipped") or []
                        ],
                    }
                    for it in m.get("top") or []
                ],
            }
        )
    notes = []
    for side in ("a", "b"):
        ids = [as_text(i) for i in diff.get(f"items_only_in_{side}") or []]
        if ids:
            notes.append(f"{len(ids)} item(s) only in {side.upper()}: {', '.join(ids)}")
        only = [as_text(i) for i in diff.get(f"metrics_only_in_{side}") or []]
        if only:
            notes.append(f"Metric(s) only in {side.upper()}: {', '.join(only)}")
    changed = [
        (str(key), f"{as_text(va)} -> {as_text(vb)}")
        for key, (va, vb) in (diff.get("changed_settings") or {}).items()
    ]
    return {
        "csp": CSP_ATTRIBUTE,
        "title": f"localjudge diff: {Path(str(diff.get('a'))).name} -> "
        f"{Path(str(diff.get('b'))).name}",
        "manifest": [
            ("A", as_text(diff.get("a"))),
            ("B", as_text(diff.get("b"))),
            ("same data", "yes" if diff.get("same_data") else "no (items matched by id)"),
            ("items matched by", as_text(diff.get("matched_by"))),
        ],
        "changed": changed,
        "notes": notes,
        "metrics": metrics,
        "payload": script_json({"metrics": list(diff.get("metrics") or {})}),
        "script": None,
    }
