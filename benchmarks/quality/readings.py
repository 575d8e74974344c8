"""What each reading a decision may read looks like, per language and per source: on passages
that answer and on passages about something else.

    python benchmarks/quality/readings.py ROWS_FOLDER [ROWS_FOLDER ...] [--half B]

Reads the judged rows of ``fitting/fit_sources.py`` / ``fitting/fit_pooled.py`` (no judge is
loaded). The readings (``fitting/fit_sources.py``'s docstring): ``judged``, the position
call's own log-odds; ``question``, how much better the judge predicts the QUESTION after the
passage than after none (what shipped before ``4b5e3f7``); ``question_centred``, the same
against the mean over the list's passages (what ships); ``grade``, the grade call's expected
grade (0-3). "Answers": XQuAD's answer paragraph or sentence, a passage people graded 2 or 3
(LLMJudge) or marked relevant (TruLens; RAGBench, LLM labels). "Other": another article's
paragraph or sentence, a passage graded 0, or one marked not relevant. Each cell: the median
and, in brackets, the quartiles. A reading that means the same everywhere keeps the two
columns apart by the same margin in every row; one that moves with the language moves both.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fitting import fit_sources_rule as rule  # noqa: E402
from fitting.common import LANGS, load_rows  # noqa: E402

READINGS = ("judged", "question", "question_centred", "grade")


def side(row: dict[str, Any]) -> str | None:
    """``answer``, ``other`` or None (neither: a same-article paragraph, a TREC grade 1)."""
    if row["source"].startswith("xquad"):
        return {"answer": "answer", "other": "other"}.get(row["role"])
    if row.get("grade") is not None:
        return {3: "answer", 2: "answer", 0: "other"}.get(row["grade"])
    return "answer" if row["relevant"] else "other"


def values(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Each row's readings, as the fits compute them (:func:`fit_sources_rule.reading_values`),
    and the grade call's expected grade."""
    readings = rule.reading_values(rows, "position.relevant")
    return [dict(v, grade=r["grade_soft"]) for r, v in zip(rows, readings, strict=True)]


def cell(xs: list[float]) -> str:
    if not xs:
        return "-"
    q1, mid, q3 = np.percentile(xs, [25, 50, 75])
    return f"{mid:+.2f} [{q1:+.2f}, {q3:+.2f}]"


def table(rows: list[dict[str, Any]], reading: str) -> list[str]:
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r, v in zip(rows, values(rows), strict=True):
        s = side(r)
        if s is None:
            continue
        key = f"{r['source']} {r['lang']}" if r["source"].startswith("xquad") else r["source"]
        found[key][s].append(v[reading])
    order = [f"{s} {lang}" for s in ("xquad", "xquadshort") for lang in LANGS]
    keys = [k for k in order if k in found] + sorted(k for k in found if k not in order)
    lines = [f"\n### {reading}\n", "| source | answers | other | n |", "|---|---|---|---|"]
    for k in keys:
        n = f"{len(found[k]['answer'])} / {len(found[k]['other'])}"
        lines.append(f"| {k} | {cell(found[k]['answer'])} | {cell(found[k]['other'])} | {n} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, nargs="+", help="folders of judged rows")
    parser.add_argument("--half", choices=("A", "B"), default=None, help="one half only")
    args = parser.parse_args(argv)
    rows = [
        r
        for folder in args.rows
        for r in load_rows(folder)
        if "statement" not in r and "judged" in r and (args.half is None or r["half"] == args.half)
    ]
    for reading in READINGS:
        print("\n".join(table(rows, reading)))


if __name__ == "__main__":
    main()
