"""What each reading a decision may read looks like, per language and per source: on passages
that answer and on passages about something else.

    python benchmarks/quality/readings.py -m JUDGE [--part choice]

Reads a judge's committed judged rows (``fitting/rows/JUDGE/``, written by
``fitting/judge.py``; no judge is loaded) of the position decision with the QUESTION alone,
never the sealed test part. The readings (:data:`localjudge.decisions.READINGS`):
``judged``, the position call's own log-odds; ``question``, how much better the judge predicts
the QUESTION after the passage than after none; ``question_alone``, how well it predicts the
QUESTION after no passage (the same for every passage of an item; neither reads another
passage); and ``grade``, the grade call's expected grade (0-3).
"Answers": XQuAD's answer paragraph or sentence, a passage people graded 2 or 3
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
sys.path.insert(0, str(ROOT / "fitting"))  # the rows files' reader and the sources

import row_files as rowsfile  # noqa: E402
from devsets import LANGS  # noqa: E402
from localjudge.decisions import READINGS as DECISION_READINGS  # noqa: E402

READINGS = (*DECISION_READINGS, "grade")


def side(row: dict[str, Any], grade: int | None) -> str | None:
    """``answer``, ``other`` or None (neither: a same-article paragraph, a TREC grade 1)."""
    if row["source"].startswith("xquad"):
        return {"answer": "answer", "other": "other"}.get(row["role"])
    if grade is not None:
        return {3: "answer", 2: "answer", 0: "other"}.get(grade)
    return "answer" if row["label"] else "other"


def values(found: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str | None, dict]]:
    """Each position row (the QUESTION alone), its side and its readings with the expected
    grade of the same passage's grade call."""
    grades = {
        (r["source"], r["id"], r["piece"]): r for r in found if r["kind"] == "relevance.grade"
    }
    out = []
    for r in found:
        if r["kind"] != "position.relevant":
            continue
        g = grades.get((r["source"], r["id"], r["piece"]))
        readings = dict(r["readings"])
        if g is not None:
            readings["grade"] = g["soft"]
        out.append((r, side(r, None if g is None else g["label"]), readings))
    return out


def cell(xs: list[float]) -> str:
    if not xs:
        return "-"
    q1, mid, q3 = np.percentile(xs, [25, 50, 75])
    return f"{mid:+.2f} [{q1:+.2f}, {q3:+.2f}]"


def table(rows: list[dict[str, Any]], reading: str) -> list[str]:
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r, s, v in values(rows):
        if s is None or reading not in v:
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
    parser.add_argument("-m", "--model", required=True, help="a judge with rows")
    parser.add_argument("--part", choices=("choice", "validation"), default=None)
    args = parser.parse_args(argv)
    _, found = rowsfile.of_judge(args.model)
    rows = [
        r for r in found if r["part"] != "test" and (args.part is None or r["part"] == args.part)
    ]
    for reading in READINGS:
        print("\n".join(table(rows, reading)))


if __name__ == "__main__":
    main()
