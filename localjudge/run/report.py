"""HTML reports of eval and bench runs: one self-contained file that makes no network request.

:func:`render_report` reads only the versioned run files (``summary.json`` + ``results.jsonl``, or
``bench.json`` + ``bench_items.jsonl``), never runner internals, so an old run can be re-reported.
The page is rendered by Jinja with autoescaping on; the CSS and JavaScript are inlined; charts are
hand-made inline SVG. The data the page's script needs sits in a JSON ``<script>`` block with
``<``, ``>`` and ``&`` escaped, and the script writes it with ``textContent`` only. A
Content-Security-Policy forbids every fetch, so a report opened from disk stays offline.

Everything except reading the files is a pure function of the parsed data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from localjudge.canonical import compact_json, file_sha256
from localjudge.data.dataset import LIST_FIELDS, read_records
from localjudge.data.items import make_item
from localjudge.errors import DataError, InvalidItemError
from localjudge.metrics import METRICS
from localjudge.metrics.base import VerdictRow, shown
from localjudge.run.results import (
    BENCH,
    BENCH_ITEMS,
    RESULTS,
    SUMMARY,
    read_bench,
    read_bench_items,
    read_results,
)
from localjudge.run.rundir import detect_run
from localjudge.run.summary import read_summary

REPORT_FILE = "report.html"
HISTOGRAM_BINS = 10
TOP_DISAGREEMENTS = 20
#: nothing may be fetched: inline styles and scripts only, images only as data: URLs
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

#: the policy as it goes into the attribute: its quotes stay literal (it is ours, not data)
_CSP_ATTRIBUTE = Markup(CSP)  # noqa: S704
_HIST_WIDTH = 300
_HIST_HEIGHT = 100
_SUMMARY_KEYS = ("n_scored", "n_failed", "n_undefined", "mean", "median", "std", "ci95")


# --------------------------------------------------------------------------- public API


def render_report(out_dir: Path, data: Path | None = None) -> str:
    """The HTML report of the eval or bench run in ``out_dir``, as one self-contained document.

    For an eval run the item contexts come from ``data`` or, when it is None, from the data file
    the run names (shown only if its sha256 still matches). Raises
    :class:`~localjudge.errors.DataError` when ``out_dir`` holds no run, a file cannot be read or
    has an unknown ``format`` version, or ``data`` is not the file the run scored.
    """
    out_dir = Path(out_dir)
    if detect_run(out_dir) == "bench":
        report = read_bench(out_dir / BENCH.name)
        items = read_bench_items(out_dir / BENCH_ITEMS.name)
        return _render("bench.html.j2", bench_view(report, items))
    summary = read_summary(out_dir / SUMMARY.name)
    rows = read_results(out_dir / RESULTS.name)
    records, note = load_records(summary, rows, data)
    return _render("eval.html.j2", eval_view(summary, rows, records, note))


def write_report(out_dir: Path, path: Path | None = None, *, data: Path | None = None) -> Path:
    """Render the report of ``out_dir`` to ``path`` (default ``out_dir/report.html``)."""
    html = render_report(out_dir, data)
    target = Path(path) if path is not None else Path(out_dir) / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, "utf-8")
    return target


def script_json(value: Any) -> Markup:
    """JSON safe to place inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` are
    written as ``\\u003c`` etc., so no string in the data can close the element."""
    text = compact_json(_finite(value))
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return Markup(text)  # noqa: S704 (escaped for this context just above)


# --------------------------------------------------------------------------- contexts


def load_records(
    summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], data: Path | None
) -> tuple[dict[int, dict[str, Any]], str]:
    """The input records the rows refer to (by index) and a note on where they came from.

    With ``data=None`` the run's own data file is used when it still exists with the same
    sha256; otherwise the report shows no contexts and the note says why.
    """
    run = summary.get("run") or {}
    expected = run.get("data_sha256")
    settings = run.get("settings") or {}
    mapping = {str(k): str(v) for k, v in (settings.get("map") or {}).items()}
    fmt = settings.get("format") if isinstance(settings.get("format"), str) else None
    wanted = {r["index"] for r in rows if isinstance(r.get("index"), int)}
    if data is None:
        if not run.get("data"):
            return {}, "Contexts are not shown: the summary names no data file."
        path = Path(str(run["data"]))
        if not path.is_file():
            return {}, f"Contexts are not shown: {path} is not there (pass --data PATH)."
        if file_sha256(path) != expected:
            return {}, (
                f"Contexts are not shown: {path} changed since the run (its sha256 differs); "
                "pass the original file with --data PATH."
            )
        try:
            return _records(path, mapping, wanted, fmt), f"Contexts from {path} (sha256 matches)."
        except DataError as exc:
            return {}, f"Contexts are not shown: {exc.message}"
    path = Path(data)
    if not path.is_file():
        raise DataError(f"data file not found: {str(path)!r}", hint="check the path")
    sha = file_sha256(path)
    if expected and sha != expected:
        raise DataError(
            f"{str(path)!r} is not the file this run scored: sha256 {sha[:12]}... differs "
            f"from the run's {str(expected)[:12]}...",
            hint="pass the data file the run was made from",
        )
    return _records(path, mapping, wanted, fmt), f"Contexts from {path} (sha256 matches)."


def _records(
    path: Path, mapping: Mapping[str, str], wanted: set[int], fmt: str | None
) -> dict[int, dict[str, Any]]:
    list_fields = set(LIST_FIELDS) | (
        {mapping["retrieved_contexts"]} if "retrieved_contexts" in mapping else set()
    )
    out: dict[int, dict[str, Any]] = {}
    for rec in read_records(path, fmt=fmt, list_fields=list_fields):
        if rec.index not in wanted or rec.data is None:
            continue
        try:
            item = make_item(rec.data, index=rec.index, mapping=mapping)
        except InvalidItemError:
            continue
        contexts = item.values.get("retrieved_contexts")
        out[rec.index] = {
            "user_input": _text(item.values.get("user_input")),
            "reference": _text(item.values.get("reference")),
            "response": _text(item.values.get("response")),
            "contexts": (
                [_text(c) for c in contexts]
                if isinstance(contexts, (list, tuple))
                else ([] if contexts is None else [_text(contexts)])
            ),
        }
    return out


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- eval view


@dataclass(frozen=True)
class Bar:
    """One histogram bin: ``[low, high)`` (the last bin includes ``high``) and its SVG rectangle."""

    low: float
    high: float
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Histogram:
    scale: float
    max_count: int
    bars: list[Bar]
    width: int = _HIST_WIDTH
    height: int = _HIST_HEIGHT


def histogram(scores: Iterable[float], scale: float = 1.0, bins: int = HISTOGRAM_BINS) -> Histogram:
    """Counts of ``scores`` in ``bins`` equal bins over ``[0, scale]``, with bar geometry scaled
    so the tallest bar fills the chart. Out-of-range scores go to the first or last bin."""
    scale = scale if scale > 0 else 1.0
    counts = [0] * bins
    for score in scores:
        # rounding keeps 0.3 (computed as 0.29999...) out of the bin below
        i = math.floor(round(score / scale * bins, 9))
        counts[min(max(i, 0), bins - 1)] += 1
    top = max(counts)
    width = _HIST_WIDTH / bins
    bars = []
    for i, n in enumerate(counts):
        height = _HIST_HEIGHT * n / top if top else 0.0
        bars.append(
            Bar(
                low=scale * i / bins,
                high=scale * (i + 1) / bins,
                count=n,
                x=round(i * width + 1, 2),
                y=round(_HIST_HEIGHT - height, 2),
                width=round(width - 2, 2),
                height=round(height, 2),
            )
        )
    return Histogram(scale=scale, max_count=top, bars=bars)


@dataclass(frozen=True)
class VerdictTable:
    columns: list[str]
    rows: list[VerdictRow] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def verdict_table(
    metric: str, verdicts: Sequence[Any] | None, details: Mapping[str, Any] | None
) -> VerdictTable:
    """The verdicts of one result row as a table, with what lowered the score flagged (each
    metric says how: :meth:`~localjudge.metrics.base.Metric.verdict_rows`), and notes on what
    was trimmed or set aside."""
    vs = [v for v in (verdicts or []) if isinstance(v, Mapping)]
    details = details or {}
    notes = []
    truncated = details.get("truncated")
    if isinstance(truncated, Mapping):
        pieces = ", ".join(f"#{p}" for p in truncated.get("pieces") or [])
        notes.append(f"Contexts were trimmed to fit the context window ({pieces or 'none'}).")
    discarded = [shown(m) for m in details.get("discarded_missing") or []]
    if discarded:
        listed = "; ".join(f'"{m}"' for m in discarded)
        notes.append(f"Missing information that repeats the prompt, not counted: {listed}.")
    copied = details.get("copied_reasons") or []
    if copied:
        notes.append(f"{len(copied)} reason(s) repeat the prompt's example or instructions.")
    missing = [shown(m) for m in details.get("missing") or []]
    cls = METRICS.get(metric)
    if cls is not None:
        return VerdictTable(list(cls.columns), cls.verdict_rows(vs), missing, notes)
    columns = sorted({k for v in vs for k in v})
    rows = [VerdictRow([shown(v.get(c)) for c in columns]) for v in vs]
    return VerdictTable(columns, rows, missing, notes)


def _str(value: Any) -> str:
    return shown(value)


def _error(value: Any) -> dict[str, str] | None:
    """A row's error with every key present (``kind``, ``field``, ``message``, ``hint``)."""
    if value is None:
        return None
    e = value if isinstance(value, Mapping) else {"message": value}
    return {
        "kind": _str(e.get("kind")) or "error",
        "field": _str(e.get("field")),
        "message": _str(e.get("message")),
        "hint": _str(e.get("hint")),
    }


def _metric_scale(summary: Mapping[str, Any], metric: str) -> float:
    settings = ((summary.get("run") or {}).get("settings") or {}).get("metrics") or {}
    scale = (settings.get(metric) or {}).get("scale", 1.0)
    return float(scale) if _is_number(scale) and scale > 0 else 1.0


def _estimate(value: Any) -> dict[str, Any] | None:
    """A prediction-powered estimate as the template shows it (None when absent or malformed)."""
    if not isinstance(value, Mapping) or not _is_number(value.get("estimate")):
        return None
    return {
        "estimate": value["estimate"],
        "ci95": value.get("ci95"),
        "data_ci95": value.get("data_ci95"),
        "n_labelled": value.get("n_labelled"),
        "judge_bias": value.get("judge_bias"),
    }


def eval_view(
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    records: Mapping[int, Mapping[str, Any]],
    data_note: str,
) -> dict[str, Any]:
    """Everything the eval template shows."""
    run = summary.get("run") or {}
    metric_names = list(summary.get("metrics") or {})
    metric_names += sorted({str(r.get("metric")) for r in rows} - set(metric_names))
    metrics = []
    for name in metric_names:
        stats = (summary.get("metrics") or {}).get(name) or {}
        scores = [
            float(r["score"])
            for r in rows
            if r.get("metric") == name and _is_number(r.get("score"))
        ]
        metrics.append(
            {
                "name": name,
                **{key: stats.get(key) for key in _SUMMARY_KEYS},
                "ppi": _estimate(stats.get("ppi")),
                "ppi_soft": _estimate(stats.get("ppi_soft")),
                "hist": histogram(scores, _metric_scale(summary, name)),
            }
        )
    items = []
    payload_items = []
    for n, r in enumerate(rows):
        error = _error(r.get("error"))
        score = r.get("score") if _is_number(r.get("score")) else None
        items.append(
            {
                "n": n,
                "index": r.get("index"),
                "id": _str(r.get("id")),
                "metric": _str(r.get("metric")),
                "score": score,
                "reason": _str(r.get("reason")),
                "error": error,
            }
        )
        table = verdict_table(_str(r.get("metric")), r.get("verdicts"), r.get("details"))
        payload_items.append(
            {
                "index": r.get("index"),
                "error": error,
                "table": asdict(table),
                "stats": {
                    k: r.get(k)
                    for k in ("seconds", "prompt_tokens", "completion_tokens")
                    if r.get(k) is not None
                },
            }
        )
    judge = run.get("judge") or {}
    manifest = [
        ("judge model", _str(judge.get("model"))),
        ("judge sha256", _str(judge.get("sha256"))),
        ("backend", _str(judge.get("backend"))),
        ("data", _str(run.get("data"))),
        ("data sha256", _str(run.get("data_sha256"))),
        ("items", _str(run.get("n_items"))),
        ("judge calls", _str(run.get("judge_calls"))),
        ("cache hits", _str(run.get("cache_hits"))),
    ]
    return {
        "csp": _CSP_ATTRIBUTE,
        "title": f"localjudge eval report: {Path(str(run.get('data') or 'run')).name}",
        "manifest": manifest,
        "judge_settings": _pairs(judge.get("settings") or {}),
        "run_settings": _pairs(
            {k: v for k, v in (run.get("settings") or {}).items() if k != "metrics"}
        ),
        "metric_settings": _pairs((run.get("settings") or {}).get("metrics") or {}),
        "versions": _pairs(run.get("versions") or {}),
        "data_note": data_note,
        "metrics": metrics,
        "items": items,
        "n_failed": sum(1 for i in items if i["error"] is not None),
        "payload": script_json(
            {
                "items": payload_items,
                "records": {str(k): v for k, v in records.items()},
                "note": data_note,
            }
        ),
        "script": _asset("report.js"),
    }


# --------------------------------------------------------------------------- bench view


def _cell(stat: Any) -> str:
    """``value [low, high]`` of a ``{"value", "ci95"}`` statistic."""
    if not isinstance(stat, Mapping):
        return "–"
    ci = stat.get("ci95")
    text = _num(stat.get("value"))
    if isinstance(ci, Sequence) and len(ci) == 2:
        text += f" [{_num(ci[0])}, {_num(ci[1])}]"
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
                [_pair(s.get("human_mean"), s.get("judge_mean")) for s in scores],
            ),
            ("seconds / item", [_num(m.get("seconds_per_item"), 2) for m in per]),
            ("tokens / s", [_num(m.get("tokens_per_s"), 1) for m in per]),
        ]
        failed = [", ".join(_str(i) for i in m.get("failed_ids") or []) for m in per]
        confusions = [
            {
                "key": key,
                "judges": [
                    {
                        "name": n,
                        "labels": [_str(label) for label in conf.get("labels") or []],
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
    worst = [r for r in items if _is_number(r.get("abs_error")) and r["abs_error"] > 0]
    manifest = [
        ("data", _str(report.get("data"))),
        ("data sha256", _str(report.get("data_sha256"))),
        ("labelled items", _str(report.get("n_labelled"))),
        ("metrics", ", ".join(_str(m) for m in report.get("metrics") or [])),
        ("judges", ", ".join(names)),
    ]
    return {
        "csp": _CSP_ATTRIBUTE,
        "title": f"localjudge bench report: {Path(str(report.get('data') or 'bench')).name}",
        "manifest": manifest,
        "versions": _pairs(report.get("versions") or {}),
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
                    {"human": _label(h), "judge": _label(j), "match": _label(h) == _label(j)}
                    for h, j in zip(human, judged, strict=False)
                ],
            }
        )
    error = row.get("error")
    return {
        "judge": _str(row.get("judge")),
        "metric": _str(row.get("metric")),
        "id": _str(row.get("id")),
        "human_score": row.get("human_score"),
        "judge_score": row.get("judge_score"),
        "abs_error": row.get("abs_error"),
        "comparisons": comparisons,
        "reason": _str(row.get("reason")),
        "error": _str(error.get("message")) if isinstance(error, Mapping) else "",
    }


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _str(value)


# --------------------------------------------------------------------------- diff view


def render_diff(diff: Mapping[str, Any]) -> str:
    """The HTML page of a :func:`localjudge.run.diff.diff_runs` document (offline, one file)."""
    return _render("diff.html.j2", diff_view(diff))


def _decision_text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_label(v)}" for k, v in value.items())
    return "–" if value is None else _label(value)


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
                "name": _str(name),
                "p_value": f"{p:.3g}" if _is_number(p) else "–",
                "worse": isinstance(ci, Sequence)
                and len(ci) == 2
                and _is_number(ci[1])
                and ci[1] < 0,
                "scored_only_in_a": [_str(i) for i in m.get("scored_only_in_a") or []],
                "scored_only_in_b": [_str(i) for i in m.get("scored_only_in_b") or []],
                "top": [
                    {
                        **{k: it.get(k) for k in ("score_a", "score_b", "delta")},
                        "id": _str(it.get("id")),
                        "reason_a": _str(it.get("reason_a")),
                        "reason_b": _str(it.get("reason_b")),
                        "error_a": _str(it.get("error_a")),
                        "error_b": _str(it.get("error_b")),
                        "flipped": [
                            {
                                "piece": f.get("piece"),
                                "a": _decision_text(f.get("a")),
                                "b": _decision_text(f.get("b")),
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
        ids = [_str(i) for i in diff.get(f"items_only_in_{side}") or []]
        if ids:
            notes.append(f"{len(ids)} item(s) only in {side.upper()}: {', '.join(ids)}")
        only = [_str(i) for i in diff.get(f"metrics_only_in_{side}") or []]
        if only:
            notes.append(f"Metric(s) only in {side.upper()}: {', '.join(only)}")
    changed = [
        (str(key), f"{_str(va)} -> {_str(vb)}")
        for key, (va, vb) in (diff.get("changed_settings") or {}).items()
    ]
    return {
        "csp": _CSP_ATTRIBUTE,
        "title": f"localjudge diff: {Path(str(diff.get('a'))).name} -> "
        f"{Path(str(diff.get('b'))).name}",
        "manifest": [
            ("A", _str(diff.get("a"))),
            ("B", _str(diff.get("b"))),
            ("same data", "yes" if diff.get("same_data") else "no (items matched by id)"),
            ("items matched by", _str(diff.get("matched_by"))),
        ],
        "changed": changed,
        "notes": notes,
        "metrics": metrics,
        "payload": script_json({"metrics": list(diff.get("metrics") or {})}),
        "script": None,
    }


# --------------------------------------------------------------------------- rendering


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _num(value: Any, digits: int = 3) -> str:
    return f"{float(value):.{digits}f}" if _is_number(value) else "–"


def _pair(a: Any, b: Any) -> str:
    return f"{_num(a)} / {_num(b)}"


def _ci(value: Any) -> str:
    if isinstance(value, Sequence) and len(value) == 2:
        return f"[{_num(value[0])}, {_num(value[1])}]"
    return "–"


def _pairs(mapping: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), _str(v)) for k, v in mapping.items()]


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (JSON has no spelling for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _asset(name: str) -> Markup:
    """A static file from ``templates/``, inlined as is (it is ours, not data)."""
    text = (resources.files("localjudge.run") / "templates" / name).read_text("utf-8")
    return Markup(text)  # noqa: S704 (our own asset, not data)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("localjudge.run", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = _num
    env.filters["ci"] = _ci
    return env


def _render(template: str, context: Mapping[str, Any]) -> str:
    return _environment().get_template(template).render(**context, style=_asset("report.css"))
