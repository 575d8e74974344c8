"""The console view of a ``localjudge diff`` (a :func:`~localjudge.run.report.diff.diff_runs`
document): one line per metric, each metric's largest changes (a flipped verdict that was a close
call in either run says so), the notes on what could not be compared, and the close calls' line.
Pure functions of the document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from localjudge.console import Column, TextTable, number
from localjudge.run.report.diff import close_flip_text
from localjudge.run.summary import counted_close_calls

__all__ = ["diff_close_line", "diff_notes", "diff_tables"]


def _p(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.1e}"


def _clip(text: Any, width: int = 60) -> str:
    s = "" if text is None else " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _flips(flipped: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"#{f['piece']}" + _suffix(close_flip_text(f)) for f in flipped) or "-"


def _suffix(text: str) -> str:
    return f" ({text})" if text else ""


def diff_close_line(diff: Mapping[str, Any]) -> str | None:
    """The line that says how many flipped verdicts of each metric were close calls in either
    run (None when none was)."""
    return counted_close_calls(
        "close calls among the flipped verdicts", diff["metrics"], "n_flipped_close"
    )


def diff_tables(diff: Mapping[str, Any]) -> list[TextTable]:
    """The console view of a diff: one line per metric, then each metric's largest changes."""
    summary_rows, styles = [], []
    for name, m in diff["metrics"].items():
        w = m["wilcoxon"] or {}
        ci = m["ci95"]
        summary_rows.append(
            [
                name,
                str(m["n_paired"]),
                number(m["mean_a"]),
                number(m["mean_b"]),
                number(m["mean_diff"], sign=True),
                f"{number(ci[0], sign=True)}..{number(ci[1], sign=True)}" if ci else "-",
                _p(w.get("p_value")),
                str(m["n_improved"]),
                str(m["n_worsened"]),
                str(m["n_flipped"]),
            ]
        )
        significant = ci is not None and (ci[0] > 0 or ci[1] < 0)
        colour = "green" if (m["mean_diff"] or 0) > 0 else "red"
        styles.append(["", "", "", "", colour if significant else "", "", "", "", "", ""])
    tables = [
        TextTable(
            [
                Column("metric"),
                Column("n", True),
                Column("mean A", True),
                Column("mean B", True),
                Column("B - A", True),
                Column("95% CI", True),
                Column("p", True),
                Column("up", True),
                Column("down", True),
                Column("flipped", True),
            ],
            summary_rows,
            title="B - A per metric (paired items; CI: paired bootstrap; p: Wilcoxon)",
            styles=styles,
        )
    ]
    for name, m in diff["metrics"].items():
        if not m["top"]:
            continue
        rows = [
            [
                _clip(it["id"], 24),
                number(it["score_a"]),
                number(it["score_b"]),
                number(it["delta"], sign=True),
                _flips(it["flipped"]),
                _clip(it["error_a"] or it["reason_a"]),
                _clip(it["error_b"] or it["reason_b"]),
            ]
            for it in m["top"]
        ]
        tables.append(
            TextTable(
                [
                    Column("id"),
                    Column("A", True),
                    Column("B", True),
                    Column("B - A", True),
                    Column("flipped"),
                    Column("reason A"),
                    Column("reason B"),
                ],
                rows,
                title=f"{name}: the {len(rows)} largest changes (of {m['n_changed']})",
            )
        )
    return tables


def diff_notes(diff: Mapping[str, Any]) -> list[str]:
    """Lines on what could not be compared and what differs between the runs' settings."""
    lines = []
    if not diff["same_data"]:
        lines.append("the runs scored different data: items matched by id (--by-id)")
    for key, (va, vb) in diff["changed_settings"].items():
        if key not in ("data", "data_sha256"):
            lines.append(f"{key}: {_clip(va, 40)} -> {_clip(vb, 40)}")
    for side in ("a", "b"):
        ids = diff[f"items_only_in_{side}"]
        if ids:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            lines.append(f"{len(ids)} item(s) only in {side.upper()}: {shown}")
        metrics = diff[f"metrics_only_in_{side}"]
        if metrics:
            lines.append(f"metric(s) only in {side.upper()}: {', '.join(metrics)}")
    return lines
