"""HTML reports of eval and bench runs: one self-contained file that makes no network request.

:func:`render_report` reads only the versioned run files (``summary.json`` + ``results.jsonl``, or
``bench.json`` + ``bench_items.jsonl``), never runner internals, so an old run can be re-reported.
The page is rendered by Jinja with autoescaping on; the CSS and JavaScript are inlined; charts are
hand-made inline SVG. The data the page's script needs sits in a JSON ``<script>`` block with
``<``, ``>`` and ``&`` escaped, and the script writes it with ``textContent`` only. A
Content-Security-Policy forbids every fetch, so a report opened from disk stays offline.

Everything except reading the files is a pure function of the parsed data. This module holds
the entry points and the eval view; bench and diff views are :mod:`localjudge.run.report.views`,
the page machinery (templates, assets, policy, formatting) :mod:`localjudge.run.report.page`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from localjudge.canonical import file_sha256
from localjudge.console import is_number
from localjudge.data.item import make_item
from localjudge.data.readers import LIST_FIELDS, read_records
from localjudge.errors import DataError, InvalidItemError
from localjudge.metrics import METRICS
from localjudge.metrics.base import VerdictRow, shown
from localjudge.run.report.page import (
    CSP_ATTRIBUTE,
    as_text,
    asset,
    render,
    script_json,
    text_pairs,
)
from localjudge.run.report.views import bench_view, diff_view
from localjudge.run.results import (
    BENCH,
    BENCH_ITEMS,
    RESULTS,
    SUMMARY,
    close_call_text,
    close_calls,
    read_bench,
    read_bench_items,
    read_results,
)
from localjudge.run.rundir import detect_run
from localjudge.run.summary import read_summary

REPORT_FILE = "report.html"
HISTOGRAM_BINS = 10
_HIST_WIDTH = 300
_HIST_HEIGHT = 100
_SUMMARY_KEYS = (
    "n_scored",
    "n_failed",
    "n_undefined",
    "mean",
    "median",
    "std",
    "ci95",
    "close_calls",
)


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
        return render("bench.html.j2", bench_view(report, items))
    summary = read_summary(out_dir / SUMMARY.name)
    rows = read_results(out_dir / RESULTS.name)
    records, note = load_records(summary, rows, data)
    return render("eval.html.j2", eval_view(summary, rows, records, note))


def write_report(out_dir: Path, path: Path | None = None, *, data: Path | None = None) -> Path:
    """Render the report of ``out_dir`` to ``path`` (default ``out_dir/report.html``)."""
    html = render_report(out_dir, data)
    target = Path(path) if path is not None else Path(out_dir) / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, "utf-8")
    return target


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
    metric says how: :meth:`~localjudge.metrics.base.Metric.verdict_rows`), each close call
    marked with its distance to the cut-off, and notes on what was trimmed or set aside."""
    vs = [v for v in (verdicts or []) if isinstance(v, Mapping)]
    details = details or {}
    notes = []
    truncated = details.get("truncated")
    if isinstance(truncated, Mapping):
        pieces = ", ".join(f"#{p}" for p in truncated.get("pieces") or [])
        notes.append(f"Contexts were trimmed to fit the context window ({pieces or 'none'}).")
    skipped = details.get("reasons_skipped")
    if isinstance(skipped, Mapping):
        why = as_text(skipped.get("why")) or "no reason given"
        notes.append(f"{as_text(skipped.get('count'))} reason(s) left out: {why}.")
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
        columns, rows = list(cls.columns), cls.verdict_rows(vs)
    else:
        columns = sorted({k for v in vs for k in v} - {"close_call"})
        rows = [VerdictRow([shown(v.get(c)) for c in columns]) for v in vs]
    rows = [
        replace(r, close=f"close call: {close_call_text(c)}") if (c := close_calls(v)) else r
        for r, v in zip(rows, vs, strict=True)
    ]
    return VerdictTable(columns, rows, missing, notes)


def _error(value: Any) -> dict[str, str] | None:
    """A row's error with every key present (``kind``, ``field``, ``message``, ``hint``)."""
    if value is None:
        return None
    e = value if isinstance(value, Mapping) else {"message": value}
    return {
        "kind": as_text(e.get("kind")) or "error",
        "field": as_text(e.get("field")),
        "message": as_text(e.get("message")),
        "hint": as_text(e.get("hint")),
    }


def _metric_scale(summary: Mapping[str, Any], metric: str) -> float:
    settings = ((summary.get("run") or {}).get("settings") or {}).get("metrics") or {}
    scale = (settings.get(metric) or {}).get("scale", 1.0)
    return float(scale) if is_number(scale) and scale > 0 else 1.0


def _estimate(value: Any) -> dict[str, Any] | None:
    """A prediction-powered estimate as the template shows it (None when absent or malformed)."""
    if not isinstance(value, Mapping) or not is_number(value.get("estimate")):
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
            float(r["score"]) for r in rows if r.get("metric") == name and is_number(r.get("score"))
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
        score = r.get("score") if is_number(r.get("score")) else None
        items.append(
            {
                "n": n,
                "close_calls": sum(len(close_calls(v)) for v in r.get("verdicts") or []),
                "index": r.get("index"),
                "id": as_text(r.get("id")),
                "metric": as_text(r.get("metric")),
                "score": score,
                "reason": as_text(r.get("reason")),
                "error": error,
            }
        )
        table = verdict_table(as_text(r.get("metric")), r.get("verdicts"), r.get("details"))
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
        ("judge model", as_text(judge.get("model"))),
        ("judge sha256", as_text(judge.get("sha256"))),
        ("backend", as_text(judge.get("backend"))),
        ("data", as_text(run.get("data"))),
        ("data sha256", as_text(run.get("data_sha256"))),
        ("items", as_text(run.get("n_items"))),
        ("judge calls", as_text(run.get("judge_calls"))),
        ("cache hits", as_text(run.get("cache_hits"))),
    ]
    return {
        "csp": CSP_ATTRIBUTE,
        "title": f"localjudge eval report: {Path(str(run.get('data') or 'run')).name}",
        "manifest": manifest,
        "judge_settings": text_pairs(judge.get("settings") or {}),
        "run_settings": text_pairs(
            {k: v for k, v in (run.get("settings") or {}).items() if k != "metrics"}
        ),
        "metric_settings": text_pairs((run.get("settings") or {}).get("metrics") or {}),
        "versions": text_pairs(run.get("versions") or {}),
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
        "script": asset("report.js"),
    }


# --------------------------------------------------------------------------- diff view


def render_diff(diff: Mapping[str, Any]) -> str:
    """The HTML page of a :func:`~localjudge.run.report.diff.diff_runs` document (offline, one
    file)."""
    return render("diff.html.j2", diff_view(diff))
