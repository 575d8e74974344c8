"""``localjudge diff``: what changed between two eval runs of the same data.

:func:`diff_runs` is a pure function of two runs' summaries and result rows. Items are paired
by input index when both runs scored the same data file (same sha256), and by item id when the
caller forces a comparison of different data (``force``). Per metric it gives the mean
difference B - A over the items both runs scored, with a paired bootstrap interval (the one
seeded bootstrap of :mod:`localjudge.stats.bootstrap`, over the per-item differences) and a Wilcoxon
signed-rank test; the items whose per-piece verdicts flipped, each flip that was a close call in
either run saying so (with its distance to the cut-off: another machine can decide such a verdict
the other way); and the items with the largest score changes, with both runs' reasons.
:func:`load_run` reads a run directory; :mod:`localjudge.run.report.diff_console` lays a diff
out for the console.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from localjudge.errors import UsageError
from localjudge.run.results import RESULTS, SUMMARY, close_call_text, close_calls, read_results
from localjudge.run.rundir import detect_run
from localjudge.run.summary import read_summary
from localjudge.stats.bootstrap import RESAMPLES, SEED, mean_interval

__all__ = [
    "DIFF_FORMAT",
    "TOP",
    "Run",
    "close_flip_text",
    "diff_runs",
    "load_run",
    "verdict_changes",
    "wilcoxon",
]

#: version of the ``--json`` document
DIFF_FORMAT = 1
#: the largest changes listed per metric by default
TOP = 10
#: verdict keys that describe a verdict rather than decide it (never counted as a flip)
_NOT_DECISIONS = frozenset({"index", "statement", "reason", "probs", "readings", "close_call"})


@dataclass(frozen=True)
class Run:
    """One eval run as its files hold it."""

    path: str
    summary: Mapping[str, Any]
    rows: Sequence[Mapping[str, Any]]


def load_run(out_dir: Path) -> Run:
    """The eval run in ``out_dir`` (a :class:`~localjudge.errors.DataError` when there is none)."""
    if detect_run(out_dir) != "eval":
        raise UsageError(
            f"{str(out_dir)!r} holds a bench run; diff compares eval runs",
            hint="give two -o directories of `localjudge eval` (a bench keeps its judges' "
            "runs under judges/)",
        )
    return Run(
        str(out_dir), read_summary(out_dir / SUMMARY.name), read_results(out_dir / RESULTS.name)
    )


# --------------------------------------------------------------------------- statistics


def wilcoxon(differences: Sequence[float]) -> dict[str, Any] | None:
    """The two-sided Wilcoxon signed-rank test of the paired differences (zero differences
    dropped, SciPy's ``zero_method="wilcox"``). When every difference is zero the runs agree
    exactly: statistic 0 and p-value 1. None without differences."""
    if not differences:
        return None
    d = np.asarray(differences, dtype=float)
    nonzero = int(np.count_nonzero(d))
    if nonzero == 0:
        return {"statistic": 0.0, "p_value": 1.0, "n_nonzero": 0}
    from scipy.stats import wilcoxon as scipy_wilcoxon  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small-sample and ties notes
        result = scipy_wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    p = float(result.pvalue)
    return {
        "statistic": float(result.statistic),
        "p_value": p if math.isfinite(p) else None,
        "n_nonzero": nonzero,
    }


def _decision(verdict: Any) -> Any:
    if isinstance(verdict, Mapping):
        return {k: v for k, v in verdict.items() if k not in _NOT_DECISIONS}
    return verdict


def verdict_changes(a: Sequence[Any] | None, b: Sequence[Any] | None) -> list[dict[str, Any]]:
    """The pieces (statements) whose decision differs between two rows' verdict lists: their
    position and both decisions (None where one list is shorter), and ``close_call_a`` /
    ``close_call_b`` where the verdict was a close call in that run (its ``close_call``).
    Reasons, probabilities, readings and close calls are not decisions; empty when either row
    has no verdict list."""
    if not a or not b:
        return []
    out = []
    for i in range(max(len(a), len(b))):
        da = _decision(a[i]) if i < len(a) else None
        db = _decision(b[i]) if i < len(b) else None
        if da != db:
            change = {"piece": i, "a": da, "b": db}
            for side, verdicts in (("a", a), ("b", b)):
                if i < len(verdicts) and (close := close_calls(verdicts[i])):
                    change[f"close_call_{side}"] = close
            out.append(change)
    return out


def close_flip_text(flip: Mapping[str, Any]) -> str:
    """What a flipped verdict's close calls were, for a reader: ``"close call in A: attributed
    -0.0005"`` (both runs': ``"...; in B: ..."``); empty when it was none in either run."""
    sides = [
        f"in {side.upper()}: {close_call_text(flip[key])}"
        for side in ("a", "b")
        if isinstance(flip.get(key := f"close_call_{side}"), Mapping)
    ]
    return f"close call {'; '.join(sides)}" if sides else ""


# --------------------------------------------------------------------------- diff


def _same_data(a: Run, b: Run) -> bool:
    sha_a = (a.summary.get("run") or {}).get("data_sha256")
    sha_b = (b.summary.get("run") or {}).get("data_sha256")
    return bool(sha_a) and sha_a == sha_b


def _keyed(run: Run, by_id: bool) -> dict[str, dict[Any, Mapping[str, Any]]]:
    """Per metric, the run's rows by item key (index, or id with ``by_id``)."""
    out: dict[str, dict[Any, Mapping[str, Any]]] = {}
    for row in run.rows:
        rows = out.setdefault(str(row["metric"]), {})
        key = str(row["id"]) if by_id else int(row["index"])
        if key in rows:
            raise UsageError(
                f"{run.path}: item id {key!r} appears more than once, so items cannot be "
                "matched by id",
                hint="give every record a unique id, or compare runs over the same data "
                "(without --by-id)",
            )
        rows[key] = row
    return out


def _score(row: Mapping[str, Any]) -> float | None:
    value = row.get("score")
    return None if row.get("error") is not None or value is None else float(value)


def _error(row: Mapping[str, Any]) -> str | None:
    error = row.get("error")
    if error is None:
        return None
    return str(error.get("message")) if isinstance(error, Mapping) else str(error)


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _metric_diff(
    a: Mapping[Any, Mapping[str, Any]],
    b: Mapping[Any, Mapping[str, Any]],
    *,
    top: int,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    keys = [k for k in a if k in b]
    scored_a: list[float] = []
    scored_b: list[float] = []
    diffs: list[float] = []
    items: list[dict[str, Any]] = []
    only_scored_a: list[str] = []
    only_scored_b: list[str] = []
    for key in keys:
        ra, rb = a[key], b[key]
        sa, sb = _score(ra), _score(rb)
        changes = verdict_changes(ra.get("verdicts"), rb.get("verdicts"))
        if sa is not None and sb is not None:
            scored_a.append(sa)
            scored_b.append(sb)
            diffs.append(sb - sa)
        elif sa is not None:
            only_scored_a.append(str(ra["id"]))
        elif sb is not None:
            only_scored_b.append(str(rb["id"]))
        delta = sb - sa if sa is not None and sb is not None else None
        if (delta is not None and delta != 0) or changes or (sa is None) != (sb is None):
            items.append(
                {
                    "id": str(rb["id"]),
                    "index_a": ra.get("index"),
                    "index_b": rb.get("index"),
                    "score_a": sa,
                    "score_b": sb,
                    "delta": delta,
                    "flipped": changes,
                    "reason_a": ra.get("reason"),
                    "reason_b": rb.get("reason"),
                    "error_a": _error(ra),
                    "error_b": _error(rb),
                }
            )
    # largest change first; then the most flipped pieces; then a newly failed or fixed item
    items.sort(
        key=lambda it: (
            -abs(it["delta"]) if it["delta"] is not None else 0.0,
            -len(it["flipped"]),
            it["delta"] is not None,
            str(it["id"]),
        )
    )
    mean_diff = _mean(diffs)
    return {
        "n_a": len(a),
        "n_b": len(b),
        "n_paired": len(diffs),
        "mean_a": _mean(scored_a),
        "mean_b": _mean(scored_b),
        "mean_diff": mean_diff,
        "ci95": mean_interval(diffs, resamples=resamples, seed=seed),
        "wilcoxon": wilcoxon(diffs),
        "n_improved": sum(d > 0 for d in diffs),
        "n_worsened": sum(d < 0 for d in diffs),
        "n_flipped": sum(1 for it in items if it["flipped"]),
        "n_flipped_close": sum(1 for it in items for f in it["flipped"] if close_flip_text(f)),
        "scored_only_in_a": only_scored_a,
        "scored_only_in_b": only_scored_b,
        "n_changed": len(items),
        "top": items[:top],
    }


def _changed_settings(a: Run, b: Run) -> dict[str, list[Any]]:
    """The run-manifest entries that differ: the judge and each run setting, as ``[a, b]``."""
    run_a, run_b = a.summary.get("run") or {}, b.summary.get("run") or {}
    out: dict[str, list[Any]] = {}
    for key in ("data", "data_sha256"):
        if run_a.get(key) != run_b.get(key):
            out[key] = [run_a.get(key), run_b.get(key)]
    judge_a, judge_b = run_a.get("judge") or {}, run_b.get("judge") or {}
    for key in sorted(set(judge_a) | set(judge_b)):
        if judge_a.get(key) != judge_b.get(key):
            out[f"judge.{key}"] = [judge_a.get(key), judge_b.get(key)]
    set_a, set_b = run_a.get("settings") or {}, run_b.get("settings") or {}
    for key in sorted(set(set_a) | set(set_b)):
        if set_a.get(key) != set_b.get(key):
            out[f"settings.{key}"] = [set_a.get(key), set_b.get(key)]
    return out


def diff_runs(
    a: Run,
    b: Run,
    *,
    force: bool = False,
    top: int = TOP,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """What changed from run ``a`` to run ``b`` (a JSON-ready document, see README "diff").

    Raises :class:`~localjudge.errors.UsageError` when the runs scored different data (their
    ``data_sha256`` differ) unless ``force``, which pairs items by id instead of index.
    """
    same = _same_data(a, b)
    if not same and not force:
        sha_a = str((a.summary.get("run") or {}).get("data_sha256"))[:12]
        sha_b = str((b.summary.get("run") or {}).get("data_sha256"))[:12]
        raise UsageError(
            f"the runs scored different data (data sha256 {sha_a}... in {a.path}, "
            f"{sha_b}... in {b.path})",
            hint="compare runs of the same data file, or pass --by-id to match items by id",
        )
    by_id = not same
    rows_a, rows_b = _keyed(a, by_id), _keyed(b, by_id)
    metrics = [m for m in rows_a if m in rows_b]
    keys_a = {k for rows in rows_a.values() for k in rows}
    keys_b = {k for rows in rows_b.values() for k in rows}
    ids_a = {k: str(r["id"]) for rows in rows_a.values() for k, r in rows.items()}
    ids_b = {k: str(r["id"]) for rows in rows_b.values() for k, r in rows.items()}
    return {
        "format": DIFF_FORMAT,
        "a": a.path,
        "b": b.path,
        "same_data": same,
        "matched_by": "id" if by_id else "index",
        "changed_settings": _changed_settings(a, b),
        "metrics": {
            m: _metric_diff(rows_a[m], rows_b[m], top=top, resamples=resamples, seed=seed)
            for m in metrics
        },
        "metrics_only_in_a": [m for m in rows_a if m not in rows_b],
        "metrics_only_in_b": [m for m in rows_b if m not in rows_a],
        "items_only_in_a": [ids_a[k] for k in sorted(keys_a - keys_b, key=str)],
        "items_only_in_b": [ids_b[k] for k in sorted(keys_b - keys_a, key=str)],
    }
